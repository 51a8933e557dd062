"""Spend: a price per model, a refusal for unpriced live models, a hard budget that is
never passed, and sim calls labelled as zero-cost fixtures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import openai
import pytest
from gateway_fakes import FakeUpstream, Step

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.gateway import Gateway, GatewayClient, GatewayError
from pytest_sabot.gateway.prices import load_prices
from pytest_sabot.gateway.protocol import Usage

PRICES = """\
version: 1
models:
  pricey-model:
    input: 100.0
    cached_input: 10.0
    output: 400.0
"""


def test_packaged_prices_carry_the_pinned_models() -> None:
    table = load_prices()
    terra, luna = table.price("gpt-5.6-terra"), table.price("gpt-5.6-luna")
    assert terra is not None and (terra.input, terra.output) == (2.50, 15.00)
    assert luna is not None and (luna.input, luna.output) == (1.00, 6.00)


def test_cost_uses_cached_and_output_prices_and_unknown_usage_is_none(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(PRICES)
    table = load_prices(path)
    usage = Usage(prompt_tokens=1000, cached_tokens=400, completion_tokens=10)
    assert table.cost("pricey-model", usage) == pytest.approx(
        (600 * 100.0 + 400 * 10.0 + 10 * 400.0) / 1e6
    )
    assert table.cost("pricey-model", Usage()) is None
    assert table.cost("other", usage) is None


def test_bad_price_table_names_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("models:\n  m:\n    input: 1\n    output: cheap\n")
    with pytest.raises(SabotDataError) as err:
        load_prices(path)
    assert str(path) in str(err.value) and "models.m" in err.value.field


def test_live_run_refuses_to_register_an_unpriced_model(
    live_gateway: Callable[..., Gateway],
) -> None:
    client = GatewayClient(live_gateway().url)
    with pytest.raises(GatewayError) as err:
        client.register_run("c~a1", "c", 11, "openai:gpt-unknown")
    assert err.value.code == "sabot_unpriced_model"
    with pytest.raises(GatewayError) as err:
        client.register_run(
            "c~a1",
            "c",
            11,
            "openai:gpt-5.6-terra",
            {"agent": "worker", "from_call": 0, "model": "gpt-unknown"},
        )
    assert err.value.code == "sabot_unpriced_model" and err.value.message.count("gpt-unknown")


def test_hard_budget_is_never_exceeded_and_exhaustion_is_a_clear_error(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, tmp_path: Path
) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(PRICES)
    gw = live_gateway(prices_path=path, budget_usd=0.2)
    client = GatewayClient(gw.url)
    client.register_run("b~a1", "b", 11, "openai:pricey-model")
    sdk = openai.OpenAI(base_url=client.base_url("b~a1", "worker"), api_key="t", max_retries=0)
    outcomes: list[str] = []
    for i in range(40):
        try:
            sdk.chat.completions.create(
                model="pricey-model",
                messages=[{"role": "user", "content": f"q{i}"}],
                max_completion_tokens=50,
            )
            outcomes.append("ok")
        except openai.APIStatusError as exc:
            assert exc.status_code == 402
            assert exc.code == "sabot_budget_exhausted"
            assert exc.response.headers["x-should-retry"] == "false"
            outcomes.append("refused")
    assert "ok" in outcomes and outcomes[-1] == "refused"
    first_refusal = outcomes.index("refused")
    assert set(outcomes[first_refusal:]) == {"refused"}
    assert len(upstream.seen) == first_refusal
    stats = client.stats()
    assert stats.budget.exhausted is True
    assert 0 < stats.budget.spent_usd <= 0.2
    records = client.drain("b~a1")
    assert sum(r.cost_usd or 0 for r in records) == pytest.approx(stats.budget.spent_usd)
    assert all(r.error and "budget" in r.error for r in records[first_refusal:])


def test_unknown_usage_keeps_its_ceiling_held_against_the_budget(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, tmp_path: Path
) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(PRICES)
    gw = live_gateway(prices_path=path, budget_usd=0.05)
    client = GatewayClient(gw.url)
    client.register_run("u~a1", "u", 11, "openai:pricey-model")
    sdk = openai.OpenAI(base_url=client.base_url("u~a1", "worker"), api_key="t", max_retries=0)
    upstream.queue(*[Step("no_usage")] * 10)
    served = 0
    with pytest.raises(openai.APIStatusError):
        for i in range(10):
            sdk.chat.completions.create(
                model="pricey-model",
                messages=[{"role": "user", "content": f"q{i}"}],
                max_completion_tokens=50,
            )
            served += 1
    budget = client.stats().budget
    assert budget.spent_usd == 0.0
    assert budget.unknown_cost_calls == served
    assert budget.reserved_usd <= 0.05


def test_sim_calls_cost_zero_and_are_labelled_fixture(
    client: GatewayClient, run: Callable[..., str]
) -> None:
    key = run("sim:credulous")
    sdk = openai.OpenAI(base_url=client.base_url(key, "worker"), api_key="t", max_retries=0)
    sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    [record] = client.drain(key)
    assert record.fixture is True and record.cost_usd == 0.0
    stats = client.stats()
    assert stats.fixture_calls == 1 and stats.upstream_calls == 0
    assert stats.budget.spent_usd == 0.0


@pytest.mark.slow
def test_hard_budget_holds_under_concurrent_calls(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, tmp_path: Path
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    path = tmp_path / "prices.yaml"
    path.write_text(PRICES)
    gw = live_gateway(prices_path=path, budget_usd=0.15, max_connections=8)
    client = GatewayClient(gw.url)
    client.register_run("p~a1", "p", 11, "openai:pricey-model")
    upstream.queue(*[Step("ok", delay_s=0.02)] * 40)
    url = client.base_url("p~a1", "worker") + "/chat/completions"

    def call(i: int) -> int:
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": f"q{i}"}],
            "max_completion_tokens": 50,
        }
        return httpx.post(url, json=body, timeout=30).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(call, range(40)))
    assert statuses.count(200) == len(upstream.seen) > 0
    assert set(statuses) == {200, 402}
    budget = client.stats().budget
    assert budget.spent_usd <= 0.15 and budget.exhausted


def test_a_call_asking_for_several_choices_reserves_the_output_of_each(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, tmp_path: Path
) -> None:
    """The provider bills the output of every choice ``n`` asks for, so the worst case held
    against the budget is n times the output limit: a call whose n choices could pass the
    cap is refused before the upstream sees it, and an n that is no count is refused."""
    path = tmp_path / "prices.yaml"
    path.write_text(PRICES)
    gw = live_gateway(prices_path=path, budget_usd=0.1)  # one choice of 50 tokens: ~$0.02
    client = GatewayClient(gw.url)
    client.register_run("n~a1", "n", 11, "openai:pricey-model")
    sdk = openai.OpenAI(base_url=client.base_url("n~a1", "worker"), api_key="t", max_retries=0)
    ask = {"model": "pricey-model", "messages": [{"role": "user", "content": "q"}],
           "max_completion_tokens": 50}
    sdk.chat.completions.create(**ask, n=1)
    assert len(upstream.seen) == 1
    with pytest.raises(openai.APIStatusError) as bad:
        sdk.chat.completions.create(**ask, n=0)
    assert bad.value.status_code == 400 and "positive whole number" in str(bad.value)
    with pytest.raises(openai.APIStatusError) as refused:
        sdk.chat.completions.create(**ask, n=8)
    assert refused.value.status_code == 402 and refused.value.code == "sabot_budget_exhausted"
    assert len(upstream.seen) == 1  # neither reached the upstream
    assert client.stats().budget.spent_usd <= 0.1
