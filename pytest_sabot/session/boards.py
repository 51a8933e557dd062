"""Which board a session writes where: its own, and the output directory's (SPEC I97, I98).

The output directory's results.json, RESULTS.md and report.html are *the directory's
board*: what ``sabot report``, ``sabot export``, ``sabot compare`` and a reader of the
directory take as its results. A session writes its own board there, except when that
would make the directory's results look like something they are not:

- a slice (``-k``, ``-m``, a pasted node id, ``--sabot-*`` filters) run in a directory that
  holds a whole wave: the slice's board goes to ``slices/<run id>/`` and the directory keeps
  the wave's board, scored again from the records on disk (the slice's records of its
  cells included), so it stays what ``sabot rescore`` reproduces (I97);
- a session run with ``--sabot-rules`` other than the wave's registered rules: its reading
  goes to ``readings/<rules>/``, the directory's board is the registered reading of the
  same records, and the summary prints both readings side by side (I98).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.results import (
    READINGS_DIR,
    RESULTS_FILE,
    SLICES_DIR,
    ResultsFile,
    SessionInfo,
    read_results,
)

if TYPE_CHECKING:
    from pytest_sabot.matrix.standard import Standard


@dataclass(frozen=True)
class Boards:
    """Where this session's board goes and what the directory's board is."""

    out_dir: Path
    session_dir: Path  # this session's results.json and RESULTS.md
    wave: ResultsFile | None = None  # the whole wave the directory held (kept, I97)
    registered_rules: str | None = None  # set when the session's rules are not (I98)

    @property
    def apart(self) -> bool:
        """The session's board is not the directory's."""
        return self.session_dir != self.out_dir


def whole_wave(out_dir: Path, std: Standard) -> ResultsFile | None:
    """The results the directory holds when they are a whole wave of ``std``'s (every
    registered cell selected), else None (none, a slice, another wave, unreadable)."""
    path = out_dir / RESULTS_FILE
    if not path.is_file():
        return None
    try:
        held = read_results(path)
    except (ValueError, OSError, SabotDataError):
        return None
    registered = {c.id for c in std.cells}
    if held.wave != std.wave.wave or set(held.selection.cell_ids) != registered:
        return None
    return held


def set_aside_damaged(out_dir: Path, run_id: str) -> Path | None:
    """A results.json in ``out_dir`` that cannot be read is moved aside to
    ``results.damaged-<run id>.json`` before this session writes its own board (it may have
    been a whole wave's, which a slice would otherwise replace unseen). Returns where it
    went; None when there is no such file or it reads."""
    path = out_dir / RESULTS_FILE
    if not path.is_file():
        return None
    try:
        read_results(path)
    except (ValueError, SabotDataError):  # a file that cannot be read at all is no damage
        aside = path.with_name(f"results.damaged-{run_id}.json")
        path.rename(aside)
        return aside
    return None


def plan(out_dir: Path, std: Standard, run_id: str, selected: list[str]) -> Boards:
    """Decide, once the selection is fixed and before any cell runs, where the boards go."""
    registered = std.wave.rules
    other_rules = std.rules.version != registered
    wave = None
    if set(selected) != {c.id for c in std.cells}:
        wave = whole_wave(out_dir, std)
    if wave is not None:
        return Boards(out_dir, out_dir / SLICES_DIR / run_id, wave,
                      registered if other_rules else None)
    if other_rules:
        return Boards(out_dir, out_dir / READINGS_DIR / std.rules.version, None, registered)
    return Boards(out_dir, out_dir)


def directory_board(
    boards: Boards, std: Standard, root: str | None, session: ResultsFile, ended: str
) -> ResultsFile:
    """The directory's board once the session's own is built: the wave it held, scored
    again with the session's records of its cells, or the session's selection under the
    registered rules."""
    from pytest_sabot.matrix.standard import load_standard
    from pytest_sabot.results.rebuild import rebuild

    if boards.wave is not None:
        wave = boards.wave
        counted = {**wave.counted, **session.counted}
        again = session.session
        slice_id = again.run_id if again else ""
        # The board stays the wave session's (its run id, its start), now counting the
        # slice's records of its cells beside every record it counted before: read the way
        # a resumed session reads the directory.
        info = SessionInfo(
            run_id=wave.session.run_id if wave.session else slice_id,
            mode="resume",
            status="running",
            detail="",
            started=wave.session.started if wave.session else (again.started if again else ""),
            ended=ended,
        )
        kept_std = load_standard(wave.wave, root, rules=wave.rules)
        first = rebuild(wave, kept_std, boards.out_dir, counted=counted, session=info)
        status = "complete" if first.selection.complete else (
            again.status if again and again.status != "complete" else "stopped")
        detail = (
            f"the wave's board, kept by the slice {slice_id} "
            f"({SLICES_DIR}/{slice_id}/results.json has the slice's own): its records of "
            f"{len(session.counted)} cell(s) counted, every other record as before"
        )
        final = info.model_copy(update={"status": status, "detail": detail})
        return rebuild(wave, kept_std, boards.out_dir, counted=counted, session=final)
    return registered_reading(boards, std, root, session)


def registered_reading(
    boards: Boards, std: Standard, root: str | None, session: ResultsFile
) -> ResultsFile:
    """The session's own selection read under the wave's registered rules: the reading its
    ``--sabot-rules`` one is printed beside (I98). A slice beside a whole wave compares
    its own cells, never the wave's board with the slice."""
    from pytest_sabot.matrix.standard import load_standard
    from pytest_sabot.results.rebuild import rebuild

    return rebuild(session, load_standard(std.wave.wave, root), boards.out_dir)
