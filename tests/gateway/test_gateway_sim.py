"""The embedded model behind the gateway: keyless, deterministic to the byte."""

from __future__ import annotations

import httpx
import pytest

from pytest_sabot.core.errors import REFUSED_MARK
from pytest_sabot.gateway import GatewayClient, GatewayError, GatewaySettings, start_gateway
from pytest_sabot.harness.model_guard import RUNAWAY_MARK

pytest.importorskip("pytest_sabot.sim.engine")

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
