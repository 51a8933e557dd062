"""Issue 9.2 and 10.7: no session ever deletes what an earlier one recorded (SPEC I42),
and resume redoes only cells with no record; running recorded RUN_ERRORs again is an
explicit option that results.json discloses (SPEC I19).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from plugin_runs import (
    BASELINE,
    SLICE,
    Run,
    accounted_once,
    clean_env,
    copy_out,
    file_hashes,
    plugin,
    pytest_command,
    run,
    shared,
    shared_dir,
    snapshot,
)

from pytest_sabot.commands.cli import main
from pytest_sabot.core.manifest import read_manifests
from pytest_sabot.results.adjudicate import read_record

# Each test runs whole pytest sessions of real pipelines (seconds each).
pytestmark = pytest.mark.slow

THREE = [*SLICE, "--sabot-operator=baseline,O1,O2"]
THREE_CELLS = [BASELINE, "langgraph-default-O1-T1-s11", "langgraph-default-O2-T1-s11"]


@pytest.fixture(scope="module")
def first(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Run:
    where = shared_dir(pytestconfig, tmp_path_factory, "sabot-sessions-first")
    return shared(where, "--sabot-wave=1", "-p", "no:xdist", *THREE)


def test_I42_a_second_session_never_reduces_the_traces_on_disk(
    first: Run, tmp_path: Path
) -> None:
    assert first.returncode == 0, first.describe()
    out = copy_out(first, tmp_path)
    before = file_hashes(out)
    assert len(before) == 3
    again = run(tmp_path, "--sabot-wave=1", "-p", "no:xdist", *THREE, out=out)
    assert again.returncode == 0, again.describe()
    after = file_hashes(out)
    assert len(after) == 6  # the three new traces beside the three set aside
    assert set(before.values()) <= set(after.values()), "a recorded trace vanished"
    for cell in THREE_CELLS:
        (aside,) = sorted((out / "superseded").glob(f"{cell}~*"))
        assert (aside / "set-aside.json").is_file()
        assert (aside / "outcome.json").is_file()
    assert main(["rescore", str(out)]) == 0


def test_I42_a_session_that_runs_no_cell_changes_nothing_on_disk(
    first: Run, tmp_path: Path
) -> None:
    out = copy_out(first, tmp_path)
    before = snapshot(out)
    user_test = tmp_path / "test_mine.py"
    user_test.write_text("def test_mine():\n    assert True\n")
    none = run(tmp_path, "test_mine.py", "--sabot-wave=1", "-m", "not sabot_cell", out=out)
    assert none.returncode == 0, none.describe()
    assert "1 passed, 1050 deselected" in none.stdout
    assert snapshot(out) == before
    elsewhere = tmp_path / "never"
    run(tmp_path, "test_mine.py", "--sabot-wave=1", "-m", "not sabot_cell", out=elsewhere)
    assert not elsewhere.exists()


def test_I42_every_session_is_identified_with_its_selection_versions_and_status(
    first: Run, tmp_path: Path
) -> None:
    out = copy_out(first, tmp_path)
    run(tmp_path, "--sabot-wave=1", "-p", "no:xdist", *SLICE, "-k", "O1", out=out)
    older, newer = read_manifests(out)
    assert older.run_id != newer.run_id
    assert older.selection.cell_ids == THREE_CELLS
    assert older.selection.filters["operator"] == ["baseline", "O1", "O2"]
    assert newer.selection.keyword == "O1"
    assert newer.selection.cell_ids == ["langgraph-default-O1-T1-s11"]
    assert newer.pulled_in_reused == [BASELINE]
    for manifest in (older, newer):
        assert manifest.status == "complete"
        assert manifest.model == "sim:realistic" and manifest.rules == "v0.1.3"
        assert len(manifest.registration_hash) == 64
        assert manifest.versions["langgraph"]
        assert manifest.ended is not None and manifest.started <= manifest.ended
    results = tmp_path.joinpath("out")
    assert main(["rescore", str(results)]) == 0
    assert read_record(out, "langgraph-default-O1-T1-s11").session == newer.run_id
    assert read_record(out, BASELINE).session == older.run_id


def test_I42_results_stay_reproducible_after_any_sequence_of_sessions(
    first: Run, tmp_path: Path
) -> None:
    out = copy_out(first, tmp_path)
    steps = [
        ["-k", "O1"],
        ["--sabot-resume"],
        ["-k", "O2", "--sabot-model=sim:vigilant"],
        ["--sabot-resume", "--sabot-model=sim:vigilant"],
    ]
    for extra in steps:
        session = run(tmp_path, "--sabot-wave=1", "-p", "no:xdist", *THREE, *extra, out=out)
        assert session.returncode == 0, session.describe()
        assert main(["rescore", str(out)]) == 0, extra
        accounted_once(session.results)
    # the last resume under another model kept nothing of the first model: every cell of
    # the selection is now a sim:vigilant record, the others set aside
    final = session.results
    assert final.selection.complete and final.model == "sim:vigilant"
    for cell in THREE_CELLS:
        assert read_record(out, cell).outcome.model == "sim:vigilant"  # type: ignore[union-attr]


def test_I42_a_session_that_stops_early_says_it_is_incomplete(tmp_path: Path) -> None:
    breaker, env = plugin(
        tmp_path / "plugins",
        "breaker",
        "def pytest_runtest_setup(item):\n"
        "    if 'O1-T1' in item.nodeid:\n"
        "        raise RuntimeError('the harness broke here')\n",
    )
    session = run(tmp_path, *breaker, "--sabot-wave=1", "-p", "no:xdist", *THREE, "-x", env=env)
    assert session.returncode == pytest.ExitCode.TESTS_FAILED, session.describe()
    results = session.results
    assert not results.selection.complete
    assert results.status_line == "incomplete: 1 of 3 selected recorded (stopped)"
    assert {n.cell_id: n.reason for n in results.selection.not_run} == {
        "langgraph-default-O1-T1-s11": "stopped",
        "langgraph-default-O2-T1-s11": "stopped",
    }
    assert "INCOMPLETE: 1 of 3 selected recorded (stopped)" in session.stdout
    assert "Incomplete: 1 of 3 selected recorded" in (session.out / "RESULTS.md").read_text()
    assert results.session is not None and results.session.status == "stopped"
    accounted_once(results)
    assert main(["rescore", str(session.out)]) == 3  # reproduced, and inconclusive


def test_I19_resume_keeps_recorded_run_errors_and_reruns_them_only_when_asked(
    tmp_path: Path,
) -> None:
    two = [*SLICE, "--sabot-operator=baseline,O1", "-p", "no:xdist"]
    broken = run(tmp_path, "--sabot-wave=1", *two, "--sabot-timeout=0.001")
    assert broken.returncode == pytest.ExitCode.TESTS_FAILED, broken.describe()
    assert "1 of 2 recorded cells are RUN_ERROR" in broken.stdout  # the fault cell: not paid for
    assert read_record(broken.out, BASELINE).run_error
    assert "RUN_ERROR" in broken.stdout
    traces = file_hashes(broken.out)

    kept = run(tmp_path, "--sabot-wave=1", *two, "--sabot-resume")
    assert file_hashes(kept.out) == traces, "resume ran a cell that has a record"
    assert read_record(kept.out, BASELINE).run_error
    assert kept.results.session is not None and kept.results.session.rerun_error_cells == []
    assert kept.returncode == pytest.ExitCode.TESTS_FAILED  # the run-error share gate

    redone = run(tmp_path, "--sabot-wave=1", *two, "--sabot-resume", "--sabot-rerun-errors")
    assert redone.returncode == 0, redone.describe()
    info = redone.results.session
    assert info is not None and info.rerun_errors and info.rerun_error_cells == [BASELINE]
    assert not read_record(redone.out, BASELINE).run_error
    assert redone.results.selection.complete
    (aside,) = sorted((redone.out / "superseded").glob(f"{BASELINE}~*"))
    assert "RUN_ERROR" in (aside / "set-aside.json").read_text()
    assert main(["rescore", str(redone.out)]) == 0


def test_I19_rerun_errors_runs_a_pulled_in_baseline_again_and_decides_its_cells_again(
    tmp_path: Path,
) -> None:
    """A slice of fault cells only pulls its baseline in; when that baseline was a
    RUN_ERROR, its fault cells were recorded as not run on it. --sabot-rerun-errors runs
    the baseline again and decides the fault cells again on its new record."""
    faults = [*SLICE, "--sabot-operator=O1,O2", "-p", "no:xdist"]
    broken = run(tmp_path, "--sabot-wave=1", *faults, "--sabot-timeout=0.001")
    assert read_record(broken.out, BASELINE).run_error, broken.describe()
    skipped = {c.cell_id: c.excluded for c in broken.results.cells if c.cell_id != BASELINE}
    assert skipped and all(e is not None and e.code == "BASELINE_FAIL"
                           for e in skipped.values()), skipped

    redone = run(tmp_path, "--sabot-wave=1", *faults, "--sabot-resume", "--sabot-rerun-errors")
    assert redone.returncode == 0, redone.describe()
    info = redone.results.session
    assert info is not None and info.rerun_error_cells == [BASELINE]
    assert not read_record(redone.out, BASELINE).run_error
    decided = {c.cell_id: c for c in redone.results.cells if c.cell_id in skipped}
    assert all(c.excluded is None for c in decided.values()), decided
    for cell in skipped:  # the records decided on the RUN_ERROR are kept, set aside
        (aside,) = sorted((redone.out / "superseded").glob(f"{cell}~*"))
        assert "decided again" in (aside / "set-aside.json").read_text()
    assert main(["rescore", str(redone.out)]) == 0


# --------------------------------------------------------------------------- issue 21.5

# Holds the session in its first cell's setup until the file HOLD_UNTIL names exists, so a
# second session can be started while the first one is certainly writing its output.
HOLDER = '''
import os, time
from pathlib import Path

def pytest_runtest_setup(item):
    release = Path(os.environ["HOLD_UNTIL"])
    while not release.exists():
        time.sleep(0.05)
'''


def _start_holding(where: Path, out: Path, release: Path) -> subprocess.Popen[str]:
    args, env = plugin(where / "plugins", "holder", HOLDER)
    where.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        pytest_command(out, *args, "--sabot-wave=1", "-p", "no:xdist", *THREE),
        cwd=where, env=clean_env({**env, "HOLD_UNTIL": str(release)}),
        stdout=(where / "stdout.txt").open("w"), stderr=subprocess.STDOUT, text=True,
    )


def _opened(out: Path, proc: subprocess.Popen[str]) -> str:
    """Wait until the session has opened the output; its run id."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        manifests = list((out / "sessions").glob("*.json")) if out.exists() else []
        # its pending results.json, then RESULTS.md beside it: the output is open
        if manifests and (out / "results.json").is_file() and (out / "RESULTS.md").is_file():
            return manifests[0].stem
        time.sleep(0.05)
    raise AssertionError(f"the first session never opened its output (exit {proc.poll()})")


@pytest.mark.parametrize("second", [["-p", "no:xdist"], ["-n", "2"]], ids=["n0", "n2"])
def test_21_5_a_second_session_on_an_output_being_written_is_refused_and_changes_nothing(
    tmp_path: Path, second: list[str]
) -> None:
    out, release = tmp_path / "out", tmp_path / "release"
    first = _start_holding(tmp_path / "first", out, release)
    try:
        holder = _opened(out, first)
        before = snapshot(out)
        refused = run(tmp_path / "second", "--sabot-wave=1", *second, *THREE, out=out)
        text = refused.stdout + refused.stderr
        assert refused.returncode == pytest.ExitCode.USAGE_ERROR, refused.describe()
        assert f"is being written by session {holder} (pid {first.pid}" in text, text
        assert "nothing was run" in text and "Traceback" not in text
        assert snapshot(out) == before  # the refused session wrote nothing at all
        assert main(["report", str(out)]) == 2  # a command rewriting results waits its turn
        assert snapshot(out) == before
    finally:
        release.touch()
        first.wait(timeout=600)
    done = Run(tmp_path / "first", out, first.returncode,
               (tmp_path / "first" / "stdout.txt").read_text(), "")
    assert done.returncode == 0, done.describe()
    results = done.results
    assert results.selection.complete and results.session is not None
    assert results.session.run_id == holder
    accounted_once(results)
    assert main(["rescore", str(out)]) == 0  # every verdict is what its record says
    for cell in THREE_CELLS:
        assert read_record(out, cell).session == holder
    # the first session has ended: the output is free again
    after = run(tmp_path / "third", "--sabot-wave=1", "-p", "no:xdist", *THREE, "--sabot-resume",
                out=out)
    assert after.returncode == 0, after.describe()


def test_21_5_the_lock_of_a_killed_session_ends_with_it(tmp_path: Path) -> None:
    out, release = tmp_path / "out", tmp_path / "release"
    first = _start_holding(tmp_path / "first", out, release)
    _opened(out, first)
    first.kill()  # SIGKILL: no handler runs, the operating system drops the lock
    first.wait(timeout=60)
    second = run(tmp_path / "second", "--sabot-wave=1", "-p", "no:xdist", *THREE, out=out)
    assert second.returncode == 0, second.describe()
    assert second.results.selection.complete
    assert main(["rescore", str(out)]) == 0
