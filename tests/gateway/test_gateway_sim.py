"""The embedded model behind the gateway: keyless, deterministic to the byte."""

from __future__ import annotations

import httpx
import pytest

from pytest_sabot.gateway import GatewayClient, GatewayError, GatewaySettings, start_gateway

REQUEST = {
    "model": "gpt-5.6-terra",
    "messages": [
        {"role": "system", "content": "You are the reviewer."},
        {"role": "user", "content": "Review the draft and end with a verdict line."},
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
