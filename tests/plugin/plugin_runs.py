"""Plugin sessions run the way users run them, and what to check on what they leave.

A session is a fresh interpreter (``python -m pytest --sabot-wave=...``) in its own
directory, with no pytest or sabot setting leaking in from the session that starts it.
``shared`` runs a session once per test session even across xdist workers (file lock);
later callers read what it left.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from pytest_sabot.core.models.verdict import BaselineVerdict
from pytest_sabot.results import ResultsFile, read_results

# LangGraph default, task T1, seed 11: the baseline and six fault cells, a few seconds.
SLICE = [
    "--sabot-framework=langgraph",
    "--sabot-config=default",
    "--sabot-task=T1",
    "--sabot-seed=11",
]
SLICE_CELLS = [
    f"langgraph-default-{op}-T1-s11" for op in ("baseline", "O1", "O2", "O3", "O4", "O5", "O6")
]
BASELINE = "langgraph-default-baseline-T1-s11"
TIMEOUT_S = 600


@dataclass(frozen=True)
class Run:
    cwd: Path
    out: Path
    returncode: int
    stdout: str
    stderr: str

    @property
    def results(self) -> ResultsFile:
        return read_results(self.out)

    def describe(self) -> str:
        return f"exit {self.returncode}\n{self.stdout[-4000:]}\n{self.stderr[-2000:]}"


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "SABOT_")) and not k.endswith("_API_KEY")
    }
    env.update(extra or {})
    return env


def default_ctrl_c() -> None:
    """Run in a child before it starts (``preexec_fn``): Ctrl-C as a terminal delivers it.
    A shell starts a background job (``cmd &``) with SIGINT ignored, and a Python started
    with SIGINT ignored keeps ignoring it; a test that interrupts its session must not
    depend on how the test run itself was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def pytest_command(out: Path, *args: str, cache: bool = False) -> list[str]:
    base = [sys.executable, "-m", "pytest", "-p", "no:randomly", f"--sabot-out={out}"]
    if not cache:
        base[3:3] = ["-p", "no:cacheprovider"]
    return [*base, *args]


def run(
    cwd: Path,
    *args: str,
    out: Path | None = None,
    env: dict[str, str] | None = None,
    cache: bool = False,
) -> Run:
    """One plugin session in ``cwd`` (created), its records under ``out`` (cwd/out)."""
    cwd.mkdir(parents=True, exist_ok=True)
    out = out or cwd / "out"
    proc = subprocess.run(
        pytest_command(out, *args, cache=cache),
        cwd=cwd,
        env=clean_env(env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    return Run(cwd, out, proc.returncode, proc.stdout, proc.stderr)


def shared_dir(config: pytest.Config, factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory every xdist worker of this test session sees."""
    base = factory.getbasetemp()
    root = base.parent if hasattr(config, "workerinput") else base
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def shared(where: Path, *args: str) -> Run:
    """``run`` once per test session in ``where``; later calls read what it left."""
    where.mkdir(parents=True, exist_ok=True)
    record = where / "session.json"
    with FileLock(where / "session.lock"):
        if not record.is_file():
            done = run(where, *args)
            record.write_text(
                json.dumps(
                    {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
                )
            )
    saved = json.loads(record.read_text())
    return Run(where, where / "out", saved["rc"], saved["stdout"], saved["stderr"])


def copy_out(source: Run, dest: Path) -> Path:
    """A copy of a session's output to run further sessions on."""
    target = dest / "out"
    shutil.copytree(source.out, target)
    return target


def verdicts(results: ResultsFile) -> dict[str, dict[str, object]]:
    """Per cell, everything the scorer said (the fields that must not depend on how or in
    how many sessions the wave was run)."""
    return {c.cell_id: c.model_dump(mode="json") for c in results.cells}


def file_hashes(root: Path, name: str = "events.jsonl") -> dict[str, str]:
    """sha256 of every file called ``name`` under ``root``, by relative path."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob(name))
    }


def snapshot(root: Path) -> dict[str, tuple[int, str]]:
    """Every file under ``root`` with its size and content hash (for 'nothing changed')."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def accounted_once(results: ResultsFile) -> None:
    """Every selected cell and every pulled-in baseline ends in exactly one recorded state:
    a verdict, a structural zero, unpaired, or not run with a reason."""
    sel = results.selection
    states: dict[str, list[str]] = {}
    for cell in results.cells:
        states.setdefault(cell.cell_id, []).append("verdict")
    for cid in results.structural_zeros:
        states.setdefault(cid, []).append("structural zero")
    for cell in sel.unpaired:
        states.setdefault(cell.cell_id, []).append("unpaired")
    for cell in sel.not_run:
        states.setdefault(cell.cell_id, []).append(f"not run: {cell.reason}")
    expected = set(sel.cell_ids) | set(sel.pulled_in)
    assert set(states) == expected, (sorted(expected - set(states)), sorted(set(states) - expected))
    doubles = {k: v for k, v in states.items() if len(v) != 1}
    assert not doubles, doubles


def no_empty_baselines(results: ResultsFile) -> None:
    """No row shows valid fault cells beside zero recorded baselines (standard S3.1)."""
    for row in results.scoreboard.rows:
        if row.valid:
            assert row.baselines.get("passed", 0) >= 1, (row.row, row.baselines)
    bases = {c.cell_id for c in results.cells if isinstance(c, BaselineVerdict)}
    for cell in results.cells:
        if not isinstance(cell, BaselineVerdict) and cell.excluded is None:
            baseline = cell.cell_id.replace(f"-{cell.operator}-", "-baseline-")
            assert baseline in bases, cell.cell_id


def plugin(where: Path, name: str, source: str) -> tuple[list[str], dict[str, str]]:
    """A small pytest plugin module for a child session (``-p name``): its hooks apply to
    the wave's cells, which live in the installed package, outside any conftest's reach."""
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{name}.py").write_text(source)
    path = os.pathsep.join(p for p in (str(where), os.environ.get("PYTHONPATH", "")) if p)
    return ["-p", name], {"PYTHONPATH": path}
