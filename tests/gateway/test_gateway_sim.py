"""The embedded model behind the gateway: keyless, deterministic to the byte."""

from __future__ import annotations

import math
import statistics
import threading
import time
from typing import Any

import httpx
import pytest

from pytest_sabot.core.errors import REFUSED_MARK
from pytest_sabot.gateway import GatewayClient, GatewayError, GatewaySettings, start_gateway
from pytest_sabot.harness.model_guard import RUNAWAY_MARK

REQUEST = {
    "model": "gpt-5.6-terra",
    "messages": [
        {"role": "system", "content": "You are the reviewer.\n=== ROLE ===\nreviewer"},
        {
            "role": "user",
            "content": "=== TASK ===\nT1\n=== DRAFT ===\n{}\nEnd with a verdict line.",
        },
    ],
}


def _serve_once(seed: int, body: dict[str, object]) -> bytes:
    gw = start_gateway(GatewaySettings())
    try:
        client = GatewayClient(gw.url)
        client.register_run("cell~a1", "cell", seed, "sim:realistic")
        response = httpx.post(
            client.base_url("cell~a1", "reviewer") + "/chat/completions", json=body, timeout=30
        )
        assert response.status_code == 200, response.text
        [record] = client.drain("cell~a1")
        assert record.fixture and record.model_served == "sim:realistic"
        return response.content
    finally:
        gw.close()


def test_sim_same_seed_and_request_give_byte_identical_response() -> None:
    assert _serve_once(11, REQUEST) == _serve_once(11, REQUEST)


def test_sim_same_seed_and_request_give_byte_identical_stream() -> None:
    streamed = {**REQUEST, "stream": True, "stream_options": {"include_usage": True}}
    first = _serve_once(12, streamed)
    assert first.endswith(b"data: [DONE]\n\n")
    assert first == _serve_once(12, streamed)


def test_sim_default_persona_is_realistic_and_unknown_persona_is_refused() -> None:
    gw = start_gateway(GatewaySettings())
    try:
        client = GatewayClient(gw.url)
        assert client.register_run("a~a1", "a", 1, "sim")["model"] == "sim:realistic"
        with pytest.raises(GatewayError) as err:
            client.register_run("b~a1", "b", 1, "sim:grumpy")
        assert err.value.code == "sabot_unknown_model" and "grumpy" in err.value.message
        plan = client.register_run(
            "c~a1", "c", 1, "sim:vigilant", {"agent": "worker", "from_call": 2}
        )
        assert plan["downgrade_model"] == "sim:vigilant-weak"
    finally:
        gw.close()


def test_I151_a_refused_request_reaches_the_openai_sdk_as_a_model_error() -> None:
    openai = pytest.importorskip("openai")
    gw = start_gateway(GatewaySettings())
    try:
        client = GatewayClient(gw.url)
        client.register_run("cell~a1", "cell", 11, "sim:realistic")
        sdk = openai.OpenAI(base_url=client.base_url("cell~a1", "critic"), api_key="x",
                            max_retries=0)
        with pytest.raises(openai.UnprocessableEntityError) as raised:
            sdk.chat.completions.create(
                model="gpt-5.6-terra",
                messages=[{"role": "system", "content": "Respond with APPROVE when done."},
                          {"role": "user", "content": "Here is the essay: ..."}],
            )
        assert "the embedded model refused a reviewer request of agent 'critic'" in str(
            raised.value)
        [record] = client.drain("cell~a1")
        assert record.error is not None and record.error.startswith(REFUSED_MARK)
        assert not record.fixture and not record.response_text
    finally:
        gw.close()


def test_I152_a_call_past_the_runs_cap_is_refused_as_runaway() -> None:
    gw = start_gateway(GatewaySettings())
    try:
        client = GatewayClient(gw.url)
        client.register_run("cell~a1", "cell", 11, "sim:realistic", max_calls=2)
        url = client.base_url("cell~a1", "reviewer") + "/chat/completions"
        codes = [httpx.post(url, json=REQUEST, timeout=30).status_code for _ in range(4)]
        assert codes == [200, 200, 403, 403]
        records = client.drain("cell~a1")
        assert [r.error is None for r in records] == [True, True, False, False]
        assert records[2].error is not None and records[2].error.startswith(RUNAWAY_MARK)
        with pytest.raises(GatewayError):
            client.register_run("cell~a2", "cell", 11, "sim:realistic", max_calls=0)
    finally:
        gw.close()


def _call(run_key: str, agent: str, index: int, seed: int = 7) -> Any:
    from pytest_sabot.gateway.backends.base import CallContext

    return CallContext(run_key, run_key.split("~")[0], seed, agent, index, "sim:realistic",
                       "realistic")


def test_sim_latency_is_a_seeded_lognormal_per_call() -> None:
    """--sabot-sim-latency: the same call of the same run takes the same time in every
    session; the draws of many calls spread around the median as a lognormal does."""
    from pytest_sabot.gateway.backends.sim import LATENCY_SIGMA, sim_latency

    first = [sim_latency(0.8, _call(f"c{i}~a1", "worker", i % 5)) for i in range(2000)]
    again = [sim_latency(0.8, _call(f"c{i}~a1", "worker", i % 5)) for i in range(2000)]
    assert first == again
    assert sim_latency(0.8, _call("c1~a1", "worker", 0)) != sim_latency(
        0.8, _call("c1~a1", "worker", 1)
    )
    ordered = sorted(first)
    median = ordered[len(ordered) // 2]
    assert 0.75 < median < 0.85
    logs = [math.log(x / 0.8) for x in first]
    spread = statistics.pstdev(logs)
    assert abs(spread - LATENCY_SIGMA) < 0.05
    assert min(first) >= 0.8 * math.exp(-3 * LATENCY_SIGMA) - 1e-9
    assert max(first) <= 0.8 * math.exp(3 * LATENCY_SIGMA) + 1e-9
    assert sim_latency(0.0, _call("c1~a1", "worker", 0)) == 0.0


def test_sim_latency_answers_in_time_with_the_same_bytes_through_a_connection() -> None:
    """A gateway with a latency answers the same bytes, no sooner than the call's draw, and
    holds one of its connections while it waits: with one connection, two calls made at
    once take the sum of their times."""
    from pytest_sabot.gateway.backends.sim import sim_latency

    quick = _serve_once(13, REQUEST)
    gw = start_gateway(GatewaySettings(sim_latency_s=0.15, max_connections=1))
    try:
        client = GatewayClient(gw.url)
        client.register_run("cell~a1", "cell", 13, "sim:realistic")
        client.register_run("other~a1", "other", 13, "sim:realistic")
        results: dict[str, bytes] = {}

        def post(key: str) -> None:
            url = client.base_url(key, "reviewer") + "/chat/completions"
            results[key] = httpx.post(url, json=REQUEST, timeout=30).content

        started = time.monotonic()
        threads = [threading.Thread(target=post, args=(k,)) for k in ("cell~a1", "other~a1")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        both = time.monotonic() - started
        assert results["cell~a1"] == quick
        draws = [sim_latency(0.15, _call(k, "reviewer", 0, 13)) for k in ("cell~a1", "other~a1")]
        # one connection: the calls were served one after the other
        assert both >= sum(draws)
        [record] = client.drain("cell~a1")
        assert record.latency_ms is not None and record.latency_ms >= draws[0] * 1000
    finally:
        gw.close()


def test_sim_latency_option_takes_milliseconds_seconds_and_refuses_the_rest() -> None:
    import argparse

    from pytest_sabot.session.options import duration

    assert duration("800ms") == pytest.approx(0.8)
    assert duration("1.5s") == 1.5
    assert duration("2") == 2.0
    assert duration("0") == 0.0
    for bad in ("fast", "-1s", "nan", "1h"):
        with pytest.raises(argparse.ArgumentTypeError, match="duration such as 800ms"):
            duration(bad)
