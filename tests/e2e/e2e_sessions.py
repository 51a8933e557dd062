"""Whole pytest sessions of the plugin, run the way users run them: a fresh interpreter
(``python -m pytest --sabot-wave=...``) in its own directory and environment.

A session that several tests read is run once per test session, even across xdist
workers: the first worker to ask runs it under a file lock and later ones read what it
left on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from pytest_sabot.results import ResultsFile, read_results

SESSION_TIMEOUT_S = 900


@dataclass(frozen=True)
class Session:
    """What a plugin session left behind."""

    cwd: Path
    out: Path
    returncode: int
    stdout: str
    stderr: str

    @property
    def results(self) -> ResultsFile:
        return read_results(self.out)


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child session: no pytest or sabot settings leak in from the
    session that starts it, and no provider key is present unless given in ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "SABOT_")) and not k.endswith("_API_KEY")
    }
    env.update(extra or {})
    return env


def run_session(
    where: Path, args: list[str], env: dict[str, str] | None = None, out: Path | None = None
) -> Session:
    """Run ``pytest <args>`` in ``where`` (created), its output under ``where/out``, once:
    a session already run there is read back instead."""
    where.mkdir(parents=True, exist_ok=True)
    out = out or where / "out"
    record = where / "session.json"
    with FileLock(where / "session.lock"):
        if not record.is_file():
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-p",
                    "no:cacheprovider",
                    "-p",
                    "no:randomly",
                    f"--sabot-out={out}",
                    *args,
                ],
                cwd=where,
                env=clean_env(env),
                capture_output=True,
                text=True,
                timeout=SESSION_TIMEOUT_S,
                check=False,
            )
            record.write_text(
                json.dumps(
                    {
                        "returncode": proc.returncode,
                        "stdout": proc.stdout,
                        "stderr": proc.stderr,
                    }
                ),
                encoding="utf-8",
            )
    saved = json.loads(record.read_text(encoding="utf-8"))
    return Session(where, out, saved["returncode"], saved["stdout"], saved["stderr"])


def describe(session: Session) -> str:
    """The tail of a session's output, for assertion messages."""
    return f"exit {session.returncode}\n{session.stdout[-4000:]}\n{session.stderr[-2000:]}"
