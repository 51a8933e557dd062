"""Plugin sessions for the scale tests: a fresh interpreter in its own directory, no pytest
or sabot setting and no provider key leaking in from the test session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_sabot.results import ResultsFile, read_results

TIMEOUT_S = 600
# LangGraph, both configs, task T1, seed 11: two baselines and twelve fault cells.
SLICE = ["--sabot-wave=1", "--sabot-framework=langgraph", "--sabot-task=T1", "--sabot-seed=11"]


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

    @property
    def raw(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.out / "results.json").read_text("utf-8"))
        return data

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


def run(
    cwd: Path,
    *args: str,
    out: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = TIMEOUT_S,
) -> Run:
    """``python -m pytest ARGS`` in ``cwd`` (created), its records under ``out`` (a
    relative ``out`` is given as it is, so the session resolves it from ``cwd``)."""
    cwd.mkdir(parents=True, exist_ok=True)
    out = out or cwd / "out"
    command = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
        f"--sabot-out={out}", *args,
    ]
    proc = subprocess.run(
        command, cwd=cwd, env=clean_env(env), capture_output=True, text=True,
        timeout=timeout, check=False,
    )
    return Run(cwd, cwd / out, proc.returncode, proc.stdout, proc.stderr)


def verdicts(results: ResultsFile) -> dict[str, dict[str, object]]:
    """Per cell, everything the scorer said."""
    return {c.cell_id: c.model_dump(mode="json") for c in results.cells}
