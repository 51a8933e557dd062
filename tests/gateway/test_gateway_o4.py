"""O4 model-downgrade: the swap lands from the planned call of the planned agent, silently,
and the exchange records say truthfully which model served."""

from __future__ import annotations

from collections.abc import Callable

import openai
import pytest
from gateway_fakes import FakeUpstream

from pytest_sabot.gateway import Gateway, GatewayClient
from pytest_sabot.gateway.recording import read_recording


def _ask(
    client: GatewayClient, key: str, agent: str, text: str
) -> openai.types.chat.ChatCompletion:
    sdk = openai.OpenAI(base_url=client.base_url(key, agent), api_key="t", max_retries=0)
    return sdk.chat.completions.create(
        model="sim-pipeline", messages=[{"role": "user", "content": text}]
    )


def test_O4_sim_persona_swaps_to_weak_tier_from_planned_call_only_for_that_agent(
    client: GatewayClient, run: Callable[..., str]
) -> None:
    key = run("sim:vigilant", downgrade={"agent": "worker", "from_call": 1, "model": None})
    served = [_ask(client, key, "worker", f"step {i}") for i in range(3)]
    other = _ask(client, key, "reviewer", "review")
    assert [r.model for r in [*served, other]] == ["sim-pipeline"] * 4
    assert served[0].choices[0].message.content is not None
    assert served[0].choices[0].message.content.startswith("[vigilant] ")
    assert served[2].choices[0].message.content is not None
    assert served[2].choices[0].message.content.startswith("[vigilant-weak] ")
    records = client.drain(key)
    assert [(r.agent, r.call_index, r.model_served, r.downgraded) for r in records] == [
        ("worker", 0, "sim:vigilant", False),
        ("worker", 1, "sim:vigilant-weak", True),
        ("worker", 2, "sim:vigilant-weak", True),
        ("reviewer", 0, "sim:vigilant", False),
    ]


def test_O4_response_carries_no_signal_of_the_swap(
    client: GatewayClient, run: Callable[..., str]
) -> None:
    plain_key = run("sim:realistic", cell_id="plain", seed=3)
    swapped_key = run(
        "sim:realistic", cell_id="swapped", seed=3, downgrade={"agent": "worker", "from_call": 0}
    )
    a = _ask(client, plain_key, "worker", "same question").model_dump()
    b = _ask(client, swapped_key, "worker", "same question").model_dump()
    assert set(a) == set(b)
    assert a["model"] == b["model"] == "sim-pipeline"
    assert a["choices"][0]["message"]["content"] != b["choices"][0]["message"]["content"]


def test_O4_plan_after_the_last_call_never_lands(
    client: GatewayClient, run: Callable[..., str]
) -> None:
    key = run("sim:realistic", downgrade={"agent": "worker", "from_call": 5})
    for i in range(2):
        _ask(client, key, "worker", f"step {i}")
    assert not any(r.downgraded for r in client.drain(key))


def test_O4_live_swap_sends_downgrade_model_upstream_and_records_it(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    gw = live_gateway()
    client = GatewayClient(gw.url)
    client.register_run(
        "T1cell~a1",
        "T1cell",
        11,
        "openai:gpt-5.6-terra",
        {"agent": "worker", "from_call": 1, "model": "gpt-5.6-luna"},
    )
    replies = [_ask(client, "T1cell~a1", "worker", f"draft {i}") for i in range(2)]
    _ask(client, "T1cell~a1", "reviewer", "review")
    assert [s.body["model"] for s in upstream.seen][:3] == [
        "gpt-5.6-terra",
        "gpt-5.6-luna",
        "gpt-5.6-terra",
    ]
    assert [r.model for r in replies] == ["sim-pipeline", "sim-pipeline"]
    # The provider's fingerprint names the model that served (fp_gpt-5.6-luna after the
    # swap): it never reaches the pipeline, streamed or not.
    assert [r.system_fingerprint for r in replies] == [None, None]
    sdk = openai.OpenAI(base_url=client.base_url("T1cell~a1", "worker"), api_key="t",
                        max_retries=0)
    chunks = list(sdk.chat.completions.create(
        model="sim-pipeline", messages=[{"role": "user", "content": "streamed"}], stream=True))
    assert chunks and all(c.system_fingerprint is None for c in chunks)
    client.close_run("T1cell~a1")
    recorded = read_recording(gw.settings.record_dir, "T1cell")  # type: ignore[arg-type]
    assert [(x.record.model_served, x.record.downgraded) for x in recorded] == [
        ("openai:gpt-5.6-terra", False),
        ("openai:gpt-5.6-luna", True),
        ("openai:gpt-5.6-terra", False),
        ("openai:gpt-5.6-luna", True),
    ]
    assert [x.response["model"] for x in recorded if x.response] == ["sim-pipeline"] * 4


def test_O4_live_downgrade_must_name_its_model(live_gateway: Callable[..., Gateway]) -> None:
    from pytest_sabot.gateway import GatewayError

    client = GatewayClient(live_gateway().url)
    with pytest.raises(GatewayError) as err:
        client.register_run(
            "c~a1", "c", 11, "openai:gpt-5.6-terra", {"agent": "worker", "from_call": 0}
        )
    assert err.value.code == "sabot_unknown_model"
    assert "must name its model" in err.value.message


def test_O4_sim_run_given_the_waves_live_downgrade_model_uses_the_weak_persona(
    client: GatewayClient,
) -> None:
    plan = client.register_run(
        "w~a1",
        "w",
        11,
        "sim:credulous",
        {"agent": "worker", "from_call": 0, "model": "gpt-5.6-luna"},
    )
    assert plan["downgrade_model"] == "sim:credulous-weak"
    explicit = client.register_run(
        "x~a1",
        "x",
        11,
        "sim:credulous",
        {"agent": "worker", "from_call": 0, "model": "sim:vigilant-weak"},
    )
    assert explicit["downgrade_model"] == "sim:vigilant-weak"


def test_exchange_record_maps_onto_the_trace_model_call_payload(
    client: GatewayClient, run: Callable[..., str]
) -> None:
    from pytest_sabot.core.models.trace import ModelCallData

    key = run("sim:realistic", downgrade={"agent": "worker", "from_call": 0})
    _ask(client, key, "worker", "draft")
    [record] = client.drain(key)
    payload = ModelCallData.model_validate(record.model_call_data())
    assert payload.model_served == "sim:realistic-weak"
    assert payload.request_hash == record.request_hash and payload.call_index == 0


@pytest.mark.slow
def test_concurrent_calls_of_one_agent_get_distinct_call_indexes(
    client: GatewayClient, run: Callable[..., str]
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    key = run("script:terra")
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda i: _ask(client, key, "worker", f"q{i}"), range(16)))
    assert sorted(r.call_index for r in client.drain(key)) == list(range(16))
