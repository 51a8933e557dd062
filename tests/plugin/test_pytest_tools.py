"""Issue 9.5: pytest's own tools keep working on waves (SPEC I46).

- ``--timeout`` (pytest-timeout) ends an attempt as a run error, never the process;
- ``--lf``, ``--sw`` and ``-x`` work on waves run from a clone of this repository, whose
  test configuration keeps the cache provider;
- a node id printed on a result line can be pasted back to run that cell.

A harness error is made for real by a small plugin that breaks the setup of one cell.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from plugin_runs import BASELINE, SLICE, Run, accounted_once, plugin, run

from pytest_sabot.commands.cli import main
from pytest_sabot.core.models.verdict import BaselineVerdict, CellVerdict

# Each test runs whole pytest sessions of real pipelines (seconds each).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BROKEN = "langgraph-default-O1-T1-s11"
BREAKER = (
    "def pytest_runtest_setup(item):\n"
    f"    if '{BROKEN}' in item.nodeid:\n"
    "        raise RuntimeError('the harness broke on this cell')\n"
)
FAULTS = [f"langgraph-default-{op}-T1-s11" for op in ("O1", "O2", "O3", "O4", "O5", "O6")]


def test_9_5_the_repository_keeps_the_cache_provider_on_for_wave_runs() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    addopts = config["tool"]["pytest"]["ini_options"].get("addopts", "")
    assert "cacheprovider" not in addopts


def _broken_session(where: Path, *extra: str) -> Run:
    breaker, env = plugin(where / "plugins", "breaker", BREAKER)
    return run(
        where, *breaker, "--sabot-wave=1", "-p", "no:xdist", *SLICE, *extra, env=env, cache=True
    )


def test_9_5_lf_runs_the_failed_cell_of_a_wave_again(tmp_path: Path) -> None:
    broken = _broken_session(tmp_path)
    assert broken.returncode == pytest.ExitCode.TESTS_FAILED, broken.describe()
    assert f"ERROR ::test_cell[{BROKEN}]" in broken.stdout
    again = run(tmp_path, "--sabot-wave=1", "-p", "no:xdist", *SLICE, "--lf", cache=True)
    assert again.returncode == 0, again.describe()
    assert "run-last-failure: rerun previous 1 failure" in again.stdout
    results = again.results
    assert results.selection.cell_ids == [BROKEN]
    assert results.selection.pulled_in == [BASELINE]  # recorded by the first session: reused
    accounted_once(results)


def test_9_5_sw_resumes_a_wave_at_the_cell_that_failed(tmp_path: Path) -> None:
    broken = _broken_session(tmp_path, "--sw")
    # --sw stops the session on purpose: pytest's own "interrupted" status, and the results
    # say the selection was stopped before it was recorded
    assert broken.returncode == pytest.ExitCode.INTERRUPTED, broken.describe()
    assert broken.results.selection.complete is False
    assert broken.results.session is not None and broken.results.session.status == "stopped"
    stepped = run(tmp_path, "--sabot-wave=1", "-p", "no:xdist", *SLICE, "--sw", cache=True)
    assert stepped.returncode == 0, stepped.describe()
    assert stepped.results.selection.cell_ids == FAULTS
    assert stepped.results.selection.pulled_in == [BASELINE]
    assert stepped.results.selection.complete


def test_9_5_a_printed_node_id_can_be_pasted_back(tmp_path: Path) -> None:
    broken = _broken_session(tmp_path / "first")
    printed = re.search(r"^ERROR (\S+)", broken.stdout, re.MULTILINE)
    assert printed is not None, broken.describe()
    node_id = printed.group(1)
    assert node_id == f"::test_cell[{BROKEN}]"
    pasted = run(tmp_path / "again", "--sabot-wave=1", "-p", "no:xdist", node_id)
    assert pasted.returncode == 0, pasted.describe()
    assert pasted.results.selection.cell_ids == [BROKEN]
    assert "1 deselected" not in pasted.stdout  # selected by its id, nothing else collected


@pytest.mark.slow
@pytest.mark.parametrize("attempt", [1, 2, 3])
def test_9_5_pytest_timeout_ends_an_attempt_as_a_run_error_never_the_session(
    tmp_path: Path, attempt: int
) -> None:
    session = run(
        tmp_path,
        "--sabot-wave=1",
        "--sabot-task=T1",
        "--sabot-seed=11",
        "--sabot-operator=baseline,O1,O4",
        "-n",
        "2",
        "--timeout=0.05",
        "--sabot-max-run-errors=1",
    )
    text = session.stdout + session.stderr
    assert session.returncode == 0, session.describe()
    assert "INTERNALERROR" not in text and "FATAL" not in text and "Timeout (>" not in text
    results = session.results
    assert results.selection.complete
    accounted_once(results)
    errors = [
        c
        for c in results.cells
        if (isinstance(c, BaselineVerdict) and c.status == "RUN_ERROR")
        or (isinstance(c, CellVerdict) and c.excluded and c.excluded.code == "RUN_ERROR")
    ]
    assert errors, "a 0.05 s limit timed no attempt out: the test shows nothing"
    for cell in errors:
        outcome = (session.out / "cells" / cell.cell_id / "outcome.json").read_text()
        assert "Timeout: the pipeline ran past 0.05s" in outcome
    assert main(["rescore", str(session.out)]) == 0
