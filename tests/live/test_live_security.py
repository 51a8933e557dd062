"""A live slice through a standalone gateway shared by URL: ``--sabot-gateway-url`` takes
the URL with its session secret, the session runs, and neither the secret nor the provider
key reaches any file the session wrote (outputs, JUnit, a DEBUG log) or its console."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock
from live_provider import FakeProvider
from live_sessions import MODEL, SELECTION, Session, clean_env, run_session

from pytest_sabot.gateway.client import split_gateway_url

pytestmark = pytest.mark.slow

SLICE = ["--sabot-framework=langgraph", "--sabot-operator=baseline,O1"]


def _shared_session(where: Path, canary: str) -> tuple[Session, str]:
    """Run the slice once per test session; the gateway URL is kept beside it (the test's
    own note, outside every directory the session writes)."""
    where.mkdir(parents=True, exist_ok=True)
    note = where / "gateway-url.txt"
    with FileLock(where / "standalone.lock"):
        if (where / "session.json").exists():
            return run_session(where, [], {}), note.read_text("utf-8").strip()
        with FakeProvider(canary, persona="vigilant", seed=11) as provider:
            gateway = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pytest_sabot.gateway",
                    "--allow-live",
                    "--base-url",
                    provider.url,
                    "--spend-ledger",
                    str(where),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=clean_env({"OPENAI_API_KEY": canary}),
            )
            try:
                assert gateway.stdout is not None
                url = gateway.stdout.readline().strip()
                note.write_text(url, encoding="utf-8")
                session = run_session(
                    where,
                    [*SELECTION, *SLICE, f"--sabot-model={MODEL}", f"--sabot-gateway-url={url}"],
                    clean_env(),  # the key lives in the gateway's environment only
                    provider.log,
                )
            finally:
                gateway.terminate()
                out, err = gateway.communicate(timeout=30)
            (where / "gateway-console.json").write_text(
                json.dumps({"stdout": out, "stderr": err}), encoding="utf-8"
            )
        return session, url


def _holding(paths: list[Path], *needles: str) -> list[str]:
    found = []
    for path in paths:
        data = path.read_bytes()
        found += [f"{path}" for needle in needles if needle.encode() in data]
    return found


def test_gateway_url_option_takes_the_secret_and_nothing_written_holds_it(
    root: Path, canary: str
) -> None:
    session, url = _shared_session(root / "standalone", canary)
    _, secret = split_gateway_url(url)
    assert session.returncode == 0, session.stdout[-3000:] + session.stderr[-2000:]
    results = json.loads((session.out / "results.json").read_text("utf-8"))
    assert results["selection"]["recorded"] == 4
    assert session.provider and all(entry["auth_ok"] for entry in session.provider)
    written = [p for p in session.out.rglob("*") if p.is_file()]
    written += [session.junit, session.log]
    assert session.log.stat().st_size > 0
    assert _holding(written, secret, canary) == []
    assert secret not in session.stdout + session.stderr
    assert canary not in session.stdout + session.stderr
    console = json.loads((root / "standalone" / "gateway-console.json").read_text("utf-8"))
    assert secret not in console["stdout"] + console["stderr"]  # printed once, on line one


def test_gateway_url_option_without_the_secret_is_refused_before_anything_runs(
    root: Path,
) -> None:
    where = root / "no-secret"
    session = run_session(
        where, [*SELECTION, *SLICE, "--sabot-gateway-url=http://127.0.0.1:9"], clean_env()
    )
    assert session.returncode == 4  # pytest's usage error
    assert "session secret" in session.stdout + session.stderr
    assert not (session.out / "cells").exists() or not any((session.out / "cells").iterdir())


def test_issue22_18_a_run_through_a_standalone_gateway_is_labelled_with_that_gateway(
    root: Path, canary: str
) -> None:
    """Its upstream, spend and recordings are the gateway's: the label says so instead of a
    plain 'live model' with none of them."""
    session, url = _shared_session(root / "standalone", canary)
    origin, secret = split_gateway_url(url)
    results = json.loads((session.out / "results.json").read_text("utf-8"))
    assert results["upstream"] == f"standalone gateway {origin}"
    assert results["label"].startswith(f"live model {MODEL} through the standalone gateway "
                                       f"{origin}: its upstream, spend and recordings")
    assert secret not in results["label"]
