"""Several cells in flight per process, in real plugin sessions (SPEC I161): a slice of every
framework of wave 1 (LangGraph, CrewAI, AutoGen; T1, seed 11, default configuration: 21
cells) run one cell at a time, then with four cells in flight per process and the embedded
model answering in a provider's time (--sabot-sim-latency), without xdist and with two
workers. Every cell's trace, outcome and verdict are the same as in the sequential run
(bench/same_verdicts.py, cell by cell), pytest reports one test per cell, and the cells did
run at the same time (CrewAI's never two at once in one process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SLICE = [
    "--sabot-wave=1",
    "--sabot-framework=langgraph,crewai,autogen",
    "--sabot-config=default",
    "--sabot-task=T1",
    "--sabot-seed=11",
    "--sabot-history=none",
]
CELLS = 21
IN_FLIGHT = ["--sabot-concurrency=4", "--sabot-sim-latency=20ms"]


@dataclass(frozen=True)
class Session:
    out: Path
    returncode: int
    stdout: str

    def describe(self) -> str:
        return f"exit {self.returncode}\n{self.stdout[-4000:]}"


RUNS = {
    "sequential": ["-p", "no:xdist"],
    "n0": ["-p", "no:xdist", *IN_FLIGHT],
    "n2": ["-n", "2", *IN_FLIGHT],
    # the automatic width: the workers' gateways share four connections (SPEC I162)
    "n2shared": ["-n", "2", "--sabot-sim-latency=20ms", "--sabot-max-connections=4"],
}


def _session(where: Path, *args: str) -> Session:
    """One plugin session in ``where``, run once per test session even across xdist
    workers (a file lock; later callers read what it left)."""
    where.mkdir(parents=True, exist_ok=True)
    saved = where / "session.json"
    with FileLock(where / "session.lock"):
        if not saved.is_file():
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("PYTEST_", "SABOT_"))}
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(REPO), env.get("PYTHONPATH", "")) if p
            )
            (where / "tmp").mkdir(exist_ok=True)
            env["TMPDIR"] = str(where / "tmp")  # where the shared budget's slots are made
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
                 f"--sabot-out={where / 'out'}", f"--junitxml={where / 'junit.xml'}", *SLICE,
                 *args],
                cwd=where, env=env, capture_output=True, text=True, timeout=900, check=False,
            )
            saved.write_text(json.dumps({"rc": proc.returncode,
                                         "stdout": proc.stdout + proc.stderr}))
    done = json.loads(saved.read_text())
    return Session(where / "out", done["rc"], done["stdout"])


@pytest.fixture(scope="module")
def root(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory every xdist worker of this test session sees."""
    base = tmp_path_factory.getbasetemp()
    path = (base.parent if hasattr(pytestconfig, "workerinput") else base) / "sabot-inflight"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def sessions(root: Path) -> dict[str, Session]:
    return _Sessions(root)


class _Sessions(dict[str, Session]):
    """Each session run when a test first asks for it."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def __missing__(self, name: str) -> Session:
        self[name] = _session(self.root / name, *RUNS[name])
        return self[name]


def _windows(out: Path) -> dict[str, tuple[float, float]]:
    """When each cell's last attempt ran: its run_start and run_end times."""
    found = {}
    for trace in (out / "cells").glob("*/events.jsonl"):
        events = [json.loads(line) for line in trace.read_text().splitlines() if line]
        found[trace.parent.name] = (events[0]["t"], events[-1]["t"])
    return found


@pytest.mark.parametrize("name", ["n0", "n2", "n2shared"])
def test_I161_cells_in_flight_record_what_a_sequential_run_records_cell_by_cell(
    sessions: dict[str, Session], name: str
) -> None:
    sequential, concurrent = sessions["sequential"], sessions[name]
    assert sequential.returncode == 0, sequential.describe()
    assert concurrent.returncode == 0, concurrent.describe()
    compared = subprocess.run(
        [sys.executable, str(REPO / "bench" / "same_verdicts.py"), str(sequential.out),
         str(concurrent.out)],
        capture_output=True, text=True, check=False,
    )
    assert compared.returncode == 0, compared.stdout[-4000:] + compared.stderr
    assert f'"trace_cells_compared": {CELLS}' in compared.stdout, compared.stdout[-2000:]


@pytest.mark.parametrize("name", ["n0", "n2"])
def test_I161_cells_ran_at_the_same_time_and_crewai_never_beside_itself_in_one_process(
    sessions: dict[str, Session], name: str
) -> None:
    windows = _windows(sessions[name].out)
    assert len(windows) == CELLS
    overlapping = [
        (a, b) for a in windows for b in windows
        if a < b and windows[a][0] < windows[b][1] and windows[b][0] < windows[a][1]
    ]
    assert overlapping, "no two cells were in flight at once"
    if name == "n0":  # one process: its CrewAI cells one after the other
        crew = [(a, b) for a, b in overlapping if a.startswith("crewai") and b.startswith("crewai")]
        assert not crew, crew


@pytest.mark.parametrize("name", ["sequential", "n0", "n2", "n2shared"])
def test_I161_pytest_reports_one_test_per_cell_with_cells_in_flight(
    sessions: dict[str, Session], name: str
) -> None:
    session = sessions[name]
    cases = ET.parse(session.out.parent / "junit.xml").getroot().iter("testcase")
    names = sorted(c.attrib["name"] for c in cases)
    results = json.loads((session.out / "results.json").read_text())
    ids = sorted(c["cell_id"] for c in results["cells"])
    assert len(ids) == CELLS
    assert names == [f"test_cell[{cid}]" for cid in ids]
    assert f"cells: {CELLS} recorded / {CELLS} selected" in session.stdout, session.describe()


def test_i162_the_shared_budget_of_a_distributed_session_is_removed_when_it_ends(
    sessions: dict[str, Session],
) -> None:
    session = sessions["n2shared"]
    assert session.returncode == 0, session.describe()
    left = sorted(p.name for p in (session.out.parent / "tmp").glob("sabot-slots-*"))
    assert left == []
    spend = json.loads((session.out / "results.json").read_text())["spend"]
    # the workers' gateways together hold the budget, not a ceiling of four each
    assert (spend["gateways"], spend["concurrency_limit"]) == (2, 4), spend
