"""Which lab run a command was given: a ``run.json``, the directory holding one, or the id
(or a unique prefix of it) of a lab run in the run history. ``sabot export``, ``inspect``,
``compare`` and ``replay`` ask here first; anything that is not a lab run is theirs as
before."""

from __future__ import annotations

from pathlib import Path

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.lab.record import LabRun, read_run
from pytest_sabot.lab.vocabulary import RUN_FILE

RESULTS_FILE = "results.json"


def is_lab_path(path: Path) -> bool:
    """A lab run's record on disk: a ``*.json`` that is not results.json (and not inside a
    results directory unless it is a run.json), or a folder with run.json and no
    results.json."""
    if path.is_file():
        return path.name != RESULTS_FILE and path.suffix == ".json" and (
            path.name == RUN_FILE or not (path.parent / RESULTS_FILE).is_file()
        )
    return (path / RUN_FILE).is_file() and not (path / RESULTS_FILE).is_file()


def lab_run_of(ref: str | Path, history: Path | None, *, timeout: float = 15.0) -> (
        tuple[LabRun, str, Path | None] | None):
    """(the record, where it was read, its run directory when it is still on disk) of the
    lab run ``ref`` names; None when ``ref`` is not a lab run (the caller's own kind, or
    nothing at all: the caller names the problem). A lab run that cannot be read raises
    SabotDataError naming the file and the field."""
    path = Path(ref)
    if path.exists():
        if not is_lab_path(path):
            return None
        file = path / RUN_FILE if path.is_dir() else path
        return read_run(file), str(file), file.parent
    if history is None or not history.is_file():
        return None
    from pytest_sabot.history.errors import RunNotFound
    from pytest_sabot.history.queries import load_lab_run, resolve_run, run_kind

    try:
        run_id, kind = run_kind(history, str(ref), timeout=timeout)
    except RunNotFound:
        return None
    if kind != "lab":
        return None
    record = load_lab_run(history, run_id, timeout=timeout)
    try:
        folder: Path | None = resolve_run(history, run_id, timeout=timeout)
    except SabotDataError:
        folder = None
    if folder is not None:  # the directory is this run's only while its run.json is it
        try:
            same = (folder / RUN_FILE).is_file() and read_run(folder / RUN_FILE) == record
        except SabotDataError:
            same = False
        folder = folder if same else None
    return record, f"{history} (lab run {run_id})", folder


__all__ = ["is_lab_path", "lab_run_of"]
