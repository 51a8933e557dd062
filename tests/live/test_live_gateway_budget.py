"""Issue 21, item 1 (SPEC.md I116): a live session through a standalone gateway shared by
``--sabot-gateway-url`` holds its own ``--sabot-budget-usd``. The reproduction: a loopback
provider whose every call costs about $0.80, a gateway started with its own (default)
cap, and a session capped at $3. Before, the provider billed every call of the slice and
results.json said ``spend: null``."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from live_provider import FakeProvider
from live_sessions import MODEL, SELECTION, clean_env, run_session

from pytest_sabot.gateway.ledger import read_ledger

pytestmark = pytest.mark.slow

# 2,000 input tokens at $2.50/M and 53,000 output tokens at $15/M: $0.80 a call.
PRICEY_USAGE = {"prompt_tokens": 2000, "completion_tokens": 53000}
CALL_USD = 2000 * 2.50 / 1e6 + 53000 * 15.00 / 1e6
CAP_USD = 3.0
SLICE = ["--sabot-framework=langgraph", "-k", "baseline"]


@contextmanager
def _standalone_gateway(provider: FakeProvider, ledger: Path, key: str) -> Iterator[str]:
    """``python -m pytest_sabot.gateway --allow-live`` with its own default cap ($500)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_sabot.gateway", "--allow-live", "--base-url",
         provider.url, "--spend-ledger", str(ledger)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=clean_env({"OPENAI_API_KEY": key}),
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def _billed(provider_log: list[dict[str, Any]]) -> float:
    return sum(CALL_USD for entry in provider_log if entry["status"] == 200)


def test_I116_a_session_through_a_shared_gateway_holds_its_own_budget(
    root: Path, canary: str
) -> None:
    where = root / "shared-gateway-budget"
    where.mkdir(parents=True, exist_ok=True)
    with FakeProvider(canary, usage=PRICEY_USAGE) as provider, _standalone_gateway(
        provider, where / "gateway-ledger", canary
    ) as url:
        session = run_session(
            where,
            [*SELECTION, *SLICE, f"--sabot-model={MODEL}", f"--sabot-gateway-url={url}",
             f"--sabot-budget-usd={CAP_USD:g}"],
            clean_env(),
            provider.log,
        )
    text = session.stdout[-3000:] + session.stderr[-2000:]
    billed = _billed(session.provider)
    assert 0 < billed <= CAP_USD, (billed, text)
    assert session.returncode == 2, text  # stopped by the spend cap, as with its own gateway
    results = json.loads((session.out / "results.json").read_text("utf-8"))
    spend = results["spend"]
    assert spend is not None, text
    assert spend["budget"]["budget_usd"] == CAP_USD and spend["budget"]["exhausted"]
    assert spend["budget"]["spent_usd"] == pytest.approx(billed)
    assert spend["upstream_calls"] == len([e for e in session.provider if e["status"] == 200])
    assert "budget" in json.dumps(results["selection"]) or "budget" in text
    # The session's own ledger holds what it spent: its output was made in its working
    # directory, so the ledger is the project's, reports/ (beside its history, SPEC I51).
    assert read_ledger(where / "reports").spent_usd == pytest.approx(billed)


class _OldGateway(BaseHTTPRequestHandler):
    """A gateway from before session accounts: every route it does not know is a 404."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = json.dumps({"error": {"message": "no control route", "type": "x",
                                     "param": None, "code": "unknown_route"}}).encode()
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer


def test_I116_a_gateway_that_cannot_hold_the_cap_is_refused_before_anything_runs(
    root: Path, canary: str
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OldGateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{'s' * 43}"
        session = run_session(
            root / "old-gateway",
            [*SELECTION, *SLICE, f"--sabot-model={MODEL}", f"--sabot-gateway-url={url}",
             "--sabot-budget-usd=3"],
            clean_env(),
        )
    finally:
        server.shutdown()
        server.server_close()
    text = session.stdout + session.stderr
    assert session.returncode == 4, text  # a usage error: nothing ran
    assert "cannot hold this session's --sabot-budget-usd=3" in text
    assert "Traceback" not in text
    assert not (session.out / "cells").exists()
