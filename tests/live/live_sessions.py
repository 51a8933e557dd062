"""Whole plugin sessions on the live path, run as users run them: a fresh interpreter
(``python -m pytest --sabot-wave=1 --sabot-model=openai:...``) in its own directory, with the
provider key only in the child's environment.

A session several tests read runs once per test session, even across xdist workers: the
first worker to ask runs it under a file lock, later ones read what it left on disk (the
provider's log of what it served included).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock
from live_provider import FakeProvider

from pytest_sabot.results import ResultsFile, read_results

SESSION_TIMEOUT_S = 600
MODEL = "openai:gpt-5.6-terra"
# Every upstream call reserves a ceiling of about $1.95 (request bytes plus the 128,000
# output tokens gpt-5.6-terra may produce when a call sets no limit), and the stand-in's
# calls cost about a cent each, so this cap admits a few calls, then stops.
TINY_BUDGET_USD = 2.0
SELECTION = [
    "--sabot-wave=1",
    "--sabot-task=T1",
    "--sabot-seed=11",
    "-p",
    "no:cacheprovider",
]


def canary_key() -> str:
    """A provider-key-shaped secret unique to one session."""
    return f"sk-canary-{secrets.token_hex(12)}"


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """No pytest or sabot setting and no provider key leaks in from the parent session."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "SABOT_")) and not k.endswith("_API_KEY")
    }
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class Session:
    """What one plugin session left behind."""

    where: Path
    out: Path
    returncode: int
    stdout: str
    stderr: str
    provider: list[dict[str, Any]]  # what the provider served: model, status, auth_ok

    @property
    def results(self) -> ResultsFile:
        return read_results(self.out)

    @property
    def junit(self) -> Path:
        return self.where / "junit.xml"

    @property
    def log(self) -> Path:
        return self.where / "session.log"


ProviderLog = Callable[[], list[dict[str, Any]]]


def run_session(
    where: Path,
    args: list[str],
    env: dict[str, str],
    provider_log: ProviderLog | None = None,
    out: Path | None = None,
) -> Session:
    """Run ``pytest <args>`` in ``where`` once (a session already run there is read back).

    The child writes JUnit XML and a DEBUG log file next to its output directory, so the
    tests can look for secrets in both."""
    where.mkdir(parents=True, exist_ok=True)
    out = out or where / "out"
    record = where / "session.json"
    with FileLock(where / "session.lock"):
        if not record.exists():
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    *args,
                    "--sabot-out",
                    str(out),
                    f"--junitxml={where / 'junit.xml'}",
                    f"--log-file={where / 'session.log'}",
                    "--log-file-level=DEBUG",
                    "-v",
                ],
                cwd=where,
                env=env,
                capture_output=True,
                text=True,
                timeout=SESSION_TIMEOUT_S,
                check=False,
            )
            served = provider_log() if provider_log is not None else []
            payload = {
                "returncode": proc.returncode,
                "stdout": proc.stdout,
                "stderr": proc.stderr,
                "provider": served,
            }
            record.write_text(json.dumps(payload), encoding="utf-8")
        saved = json.loads(record.read_text(encoding="utf-8"))
    return Session(
        where, out, saved["returncode"], saved["stdout"], saved["stderr"], saved["provider"]
    )


def shared_secret(where: Path) -> str:
    """One canary key per test session, the same for every xdist worker."""
    where.mkdir(parents=True, exist_ok=True)
    path = where / "canary.key"
    with FileLock(where / "canary.lock"):
        if not path.exists():
            path.write_text(canary_key(), encoding="utf-8")
        return path.read_text(encoding="utf-8").strip()


def strip_timing(event: dict[str, Any]) -> dict[str, Any]:
    """A trace event without its wall-clock fields (never adjudicated)."""
    data = {k: v for k, v in event["data"].items() if k != "latency_ms"}
    return {**{k: v for k, v in event.items() if k != "t"}, "data": data}


def read_events(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def live_run(where: Path, key: str, args: list[str], out: Path | None = None) -> Session:
    """A live session of the wave-1 T1/seed-11 slice against a fresh loopback provider that
    honours ``key`` (read back when it already ran)."""
    if (where / "session.json").exists():
        return run_session(where, [], {}, out=out)
    with FakeProvider(key, persona="vigilant", seed=11) as provider:
        return run_session(
            where,
            [*SELECTION, f"--sabot-model={MODEL}", f"--sabot-base-url={provider.url}", *args],
            clean_env({"OPENAI_API_KEY": key}),
            provider.log,
            out=out,
        )
