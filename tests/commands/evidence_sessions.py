"""The recorded cells of the evidence commands' tests: real plugin sessions on the live
path, against a loopback provider answered by the embedded model (tests/live's helpers: no
network beyond loopback, no paid API): the wave-1 LangGraph default slice of T1, seed 11
(its baseline and O1), once under the vigilant persona and once under the credulous one."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))

from live_provider import FakeProvider
from live_sessions import MODEL, SELECTION, Session, clean_env, run_session

SLICE = ["--sabot-framework=langgraph", "--sabot-config=default", "--sabot-operator=baseline,O1"]
FAULT = "langgraph-default-O1-T1-s11"
BASELINE = "langgraph-default-baseline-T1-s11"


def live(where: Path, key: str, persona: str) -> Session:
    """The slice once per test session in ``where`` (read back when it already ran)."""
    if (where / "session.json").exists():
        return run_session(where, [], {})
    with FakeProvider(key, persona=persona, seed=11) as provider:
        return run_session(
            where,
            [*SELECTION, f"--sabot-model={MODEL}", f"--sabot-base-url={provider.url}", *SLICE],
            clean_env({"OPENAI_API_KEY": key}),
            provider.log,
        )


def tree_digest(top: Path) -> dict[str, bytes]:
    """Every file under ``top`` with its bytes: to show a directory was not touched."""
    return {str(p.relative_to(top)): p.read_bytes() for p in sorted(top.rglob("*"))
            if p.is_file()}


KEYLESS = ["--sabot-wave=1", "--sabot-framework=langgraph", "--sabot-task=T1",
           "--sabot-seed=11", *SLICE[1:]]


def keyless(where: Path, extra: list[str], out: Path | None = None) -> tuple[int, str, Path]:
    """A keyless session of the slice (sim:realistic) run as users run it, in a fresh
    interpreter in ``where``: (exit code, its terminal output, its output directory)."""
    import subprocess

    import pytest_sabot

    where.mkdir(parents=True, exist_ok=True)
    out = out or where / "reports" / "wave-1"
    source = str(Path(pytest_sabot.__file__).resolve().parents[1])
    env = clean_env()
    env["PYTHONPATH"] = source
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
         f"--sabot-out={out}", *KEYLESS, *extra],
        cwd=where, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr, out
