"""Provider refusals on the live path: the gateway waits out 429s with Retry-After and the
cell completes; insufficient_quota and a wrong key are not retried and the cell is a
RUN_ERROR, with the wrong key quoted nowhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from live_provider import FakeProvider, Fault
from live_sessions import MODEL, canary_key

from pytest_sabot.core.records import RunOutcome, cell_dir
from pytest_sabot.gateway import Gateway, GatewaySettings, start_gateway
from pytest_sabot.harness.run import RunSettings, run_cell
from pytest_sabot.matrix.standard import Standard
from pytest_sabot.results.adjudicate import score_baseline_dir

pytestmark = pytest.mark.slow

CELL = "langgraph-default-baseline-T1-s11"
THROTTLES = 3


@pytest.fixture
def live_gateway(
    provider: FakeProvider, canary: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Gateway]:
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    gateway = start_gateway(
        GatewaySettings(
            allow_live=True,
            base_url=provider.url,
            record_dir=tmp_path / "recordings",
            budget_usd=25.0,
        )
    )
    yield gateway
    gateway.close()


def _run(wave1: Standard, gateway: Gateway, out: Path) -> RunOutcome:
    settings = RunSettings(
        root=wave1.root, out_dir=out, gateway_url=gateway.url, model=MODEL, timeout_s=120.0
    )
    return run_cell(wave1.cell(CELL), wave1.wave, settings)


def test_429_with_retry_after_is_retried_by_the_gateway_and_the_cell_completes(
    wave1: Standard, provider: FakeProvider, live_gateway: Gateway, tmp_path: Path
) -> None:
    provider.queue(*[Fault(429, "rate_limit_exceeded", retry_after="1")] * THROTTLES)
    outcome = _run(wave1, live_gateway, tmp_path / "out")
    assert outcome.error is None and outcome.attempts == 1
    assert outcome.passed, outcome.pass_reason
    statuses = provider.statuses()
    assert statuses[:THROTTLES] == [429] * THROTTLES and set(statuses[THROTTLES:]) == {200}
    stats = live_gateway.service.stats()
    # Every exchange the pipeline saw was answered; the throttled sends are the retries.
    assert stats.errors == 0
    assert stats.upstream_retries == THROTTLES
    assert stats.upstream_calls - stats.calls == THROTTLES
    assert stats.upstream_calls == len(statuses)


def test_insufficient_quota_is_not_retried_and_is_a_run_error(
    wave1: Standard, provider: FakeProvider, live_gateway: Gateway, tmp_path: Path
) -> None:
    # One quota refusal per attempt: the harness retries a failed cell once, the gateway
    # never retries a quota refusal, and no framework client retries on its own.
    provider.queue(*[Fault(429, "insufficient_quota", kind="insufficient_quota")] * 2)
    outcome = _run(wave1, live_gateway, tmp_path / "out")
    assert outcome.attempts == 2
    assert outcome.error is not None and "insufficient_quota" in outcome.error
    assert provider.statuses() == [429, 429]
    stats = live_gateway.service.stats()
    assert stats.upstream_calls == 2 and stats.upstream_retries == 0
    assert score_baseline_dir(wave1, cell_dir(tmp_path / "out", CELL)).status == "RUN_ERROR"


def test_wrong_key_is_refused_401_not_retried_and_never_written(
    wave1: Standard,
    provider: FakeProvider,
    live_gateway: Gateway,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wrong = canary_key()
    monkeypatch.setenv("OPENAI_API_KEY", wrong)
    outcome = _run(wave1, live_gateway, tmp_path / "out")
    assert outcome.attempts == 2
    assert outcome.error is not None and "invalid_api_key" in outcome.error
    assert provider.statuses() == [401, 401]
    assert live_gateway.service.stats().upstream_retries == 0
    assert score_baseline_dir(wave1, cell_dir(tmp_path / "out", CELL)).status == "RUN_ERROR"
    live_gateway.close()  # flushes the recordings
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "exchanges.jsonl" for p in written)
    assert [str(p) for p in written if wrong.encode() in p.read_bytes()] == []
