"""Issue 27: a session scores its records once at its end when every cell was recorded.

The session builds results.json once to learn how it ended, then gives the cells without a
record their reasons. When there are none, the final results.json is the first build with
how the session ended: the same as building it again, without reading and scoring every
record a second time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_sabot.commands.rescore import rebuild
from pytest_sabot.commands.results_dir import read_results_of
from pytest_sabot.results import NotRunCell
from pytest_sabot.session.finishing import with_session


@pytest.fixture
def recorded(tiny: Path, tmp_path: Path) -> Path:
    """A copy of the tiny wave: its traces are read from paths of this test's own (a
    process keeps the last traces it parsed by path, and other tests count the parses of
    the tiny wave's own)."""
    return Path(shutil.copytree(tiny, tmp_path / "wave"))


def test_27_a_complete_sessions_second_build_is_its_first_with_how_it_ended(
    recorded: Path,
) -> None:
    written = read_results_of(recorded)
    assert written.session is not None and written.session.status == "complete"
    assert written.selection.complete and not written.selection.not_run
    running = written.model_copy(update={
        "session": written.session.model_copy(update={"status": "running", "ended": None})
    })
    first = rebuild(running, recorded, written.rules, None)
    assert first.session is not None and first.session.status == "running"
    built_again = rebuild(written, recorded, written.rules, None)
    shortcut = with_session(first, written.session)
    assert shortcut.model_dump(mode="json") == built_again.model_dump(mode="json")
    assert shortcut.model_dump(mode="json") == written.model_dump(mode="json")


def test_27_cells_without_a_record_are_built_again_with_their_reasons(tiny: Path) -> None:
    written = read_results_of(tiny)
    assert written.session is not None
    missing = NotRunCell(cell_id=written.cells[0].cell_id, reason="interrupted",
                         detail="interrupted (Ctrl-C or SIGTERM)")
    partial = written.model_copy(update={
        "selection": written.selection.model_copy(update={"not_run": [missing]})
    })
    with pytest.raises(AssertionError, match="need their reasons"):
        with_session(partial, written.session)


def test_27_another_sessions_results_are_not_taken_for_this_ones(tiny: Path) -> None:
    written = read_results_of(tiny)
    assert written.session is not None
    other = written.session.model_copy(update={"run_id": "20990101T000000Z-000000"})
    with pytest.raises(AssertionError):
        with_session(written, other)
