"""Faults on the model path: an upstream that resets the connection, hangs past the call's
deadline, drips its answer, or answers malformed JSON, and a gateway handler that dies.
Each one becomes an error answer the client sees (and the harness records as a run error
with its one retry), never a hung call or a hung session."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from gateway_fakes import FakeUpstream, ScriptedBackend, Step

from pytest_sabot.gateway import (
    BackendReply,
    CallContext,
    Gateway,
    GatewayClient,
    GatewaySettings,
    start_gateway,
)

# The clients below wait this long at most: a gateway that did not answer in time would
# show up as openai.APITimeoutError, not as the error answer each test expects.
CLIENT_TIMEOUT_S = 30.0
CELL = "langgraph-default-baseline-T1-s11"


def _sdk(client: GatewayClient, label: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=client.base_url(label, "worker"),
        api_key="sabot-local",
        max_retries=0,
        timeout=CLIENT_TIMEOUT_S,
    )


def _ask(sdk: openai.OpenAI) -> str:
    reply = sdk.chat.completions.create(
        model="gpt-5.6-terra", messages=[{"role": "user", "content": "hello"}]
    )
    return reply.choices[0].message.content or ""


def _live_run(gw: Gateway, label: str = "f~a1") -> tuple[GatewayClient, openai.OpenAI]:
    client = GatewayClient(gw.url)
    client.register_run(label, label.split("~")[0], 11, "openai:gpt-5.6-terra")
    return client, _sdk(client, label)


def test_model_path_connection_reset_is_retried_then_answered_502(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    client, sdk = _live_run(live_gateway(max_retries=2))
    upstream.queue(Step("reset"), Step("ok"))
    assert _ask(sdk).startswith("[gpt-5.6-terra]")
    upstream.queue(*[Step("reset")] * 3)
    with pytest.raises(openai.APIStatusError) as err:
        _ask(sdk)
    assert err.value.status_code == 502 and err.value.code == "sabot_upstream_unavailable"
    assert "connection error" in err.value.message and "after 3 attempts" in err.value.message
    assert len(upstream.seen) == 5
    records = client.drain("f~a1")
    assert records[0].error is None and records[1].error is not None
    # the upstream may have billed a reset call: its worst case stays charged as unknown
    assert client.stats().budget.unknown_cost_calls == 4


@pytest.mark.parametrize("kind", ["hang", "drip"])
def test_model_path_upstream_past_its_deadline_is_answered_504(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, kind: str
) -> None:
    # The read timeout alone (300 s) would wait far longer than the client does.
    gw = live_gateway(upstream_deadline_s=1.0, upstream_timeout_s=300.0)
    client, sdk = _live_run(gw)
    upstream.queue(*[Step(kind, delay_s=20.0 if kind == "hang" else 0.2)] * 3)
    with pytest.raises(openai.APIStatusError) as err:
        _ask(sdk)
    assert err.value.status_code == 504 and err.value.code == "sabot_upstream_deadline"
    assert "deadline of 1s" in err.value.message
    [record] = client.drain("f~a1")
    assert record.error is not None and "deadline" in record.error


def test_model_path_malformed_upstream_json_ends_in_502_within_the_attempts(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    _, sdk = _live_run(live_gateway(max_retries=3))
    upstream.queue(*[Step("malformed")] * 4)
    with pytest.raises(openai.APIStatusError) as err:
        _ask(sdk)
    assert err.value.status_code == 502
    assert "not a ChatCompletion" in err.value.message and "after 4 attempts" in err.value.message
    assert len(upstream.seen) == 4


def test_model_path_deadline_bounds_the_backoff_too(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    # Retry-After asks for 60 s; the deadline (1 s) ends the call instead of the wait.
    gw = live_gateway(upstream_deadline_s=1.0, backoff_max_s=60.0, max_retries=6)
    _, sdk = _live_run(gw)
    upstream.queue(*[Step("status", 503, headers={"Retry-After": "60"})] * 7)
    with pytest.raises(openai.APIStatusError) as err:
        _ask(sdk)
    assert err.value.status_code == 504
    assert len(upstream.seen) == 1


class HandlerKilled(BaseException):
    """Not an Exception: what ends a thread, not what a handler expects to catch."""


class DyingBackend:
    """Kills the handler thread serving its calls."""

    def complete(self, request: dict[str, Any], call: CallContext) -> BackendReply:
        raise HandlerKilled("the handler thread was killed")


@pytest.fixture
def dying_gateway() -> Iterator[Gateway]:
    gw = start_gateway(
        GatewaySettings(client_timeout_s=2.0),
        backends={"die": DyingBackend(), "script": ScriptedBackend()},
    )
    yield gw
    gw.close()


def test_model_path_a_dying_handler_thread_answers_500_and_the_gateway_serves_on(
    dying_gateway: Gateway,
) -> None:
    client = GatewayClient(dying_gateway.url)
    client.register_run("d~a1", "d", 11, "die:x")
    with pytest.raises(openai.InternalServerError) as err:
        _ask(_sdk(client, "d~a1"))
    assert err.value.code == "sabot_internal_error" and "HandlerKilled" in err.value.message
    client.register_run("ok~a1", "ok", 11, "script:x")
    assert _ask(_sdk(client, "ok~a1")).startswith("[x]")
    assert client.health()


# --------------------------------------------------------------------------- the pipeline


FAULTS = {
    "reset": ([Step("reset")] * 40, {"max_retries": 1}, "connection error"),
    "hang": ([Step("hang", delay_s=20.0)] * 40, {"upstream_deadline_s": 1.0}, "deadline"),
    "malformed": ([Step("malformed")] * 40, {"max_retries": 1}, "not a ChatCompletion"),
}


@pytest.mark.slow
@pytest.mark.parametrize("fault", [*FAULTS, "handler-dies"])
def test_S3_1_model_path_fault_is_a_run_error_with_its_one_retry(
    live_gateway: Callable[..., Gateway],
    dying_gateway: Gateway,
    upstream: FakeUpstream,
    tmp_path: Path,
    fault: str,
) -> None:
    from pytest_sabot.core.trace_io import read_trace
    from pytest_sabot.harness.run import RunSettings, run_cell
    from pytest_sabot.matrix.standard import load_standard

    std = load_standard(1)
    if fault == "handler-dies":
        gw, model, expected = dying_gateway, "die:x", "HandlerKilled"
    else:
        steps, overrides, expected = FAULTS[fault]
        upstream.queue(*steps)
        gw, model = live_gateway(**overrides), "openai:gpt-5.6-terra"
    settings = RunSettings(
        root=std.root, out_dir=tmp_path / "out", gateway_url=gw.url, model=model, timeout_s=120.0
    )
    outcome = run_cell(std.cell(CELL), std.wave, settings)
    assert outcome.attempts == 2
    assert outcome.error is not None and expected in outcome.error
    assert not outcome.error.startswith("Timeout")  # the gateway answered; nothing hung
    cell_dir = tmp_path / "out" / "cells" / CELL
    for trace_path in (cell_dir / "attempt-1" / "events.jsonl", cell_dir / "events.jsonl"):
        errors = read_trace(trace_path).of_kind("run_error")
        assert len(errors) == 1 and expected in errors[0].data.message
    assert GatewayClient(gw.url).stats().runs_open == 0
