"""The spend cap against what a request or a provider could slip past it (SPEC I51): a
negative token count, a call with no output limit under a price table without the model's
limit, fields billed above the table's rates, a file part, dearer cached input, one ledger
reached by two paths, and an output directory made in the working directory."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import openai
import pytest
from gateway_fakes import FakeUpstream, Step

from pytest_sabot.gateway import Gateway, GatewayClient
from pytest_sabot.gateway.accounts import _same_file
from pytest_sabot.gateway.prices import ModelPrice, PriceTable

NO_LIMIT_PRICES = """\
version: 1
models:
  table-model:
    input: 2.50
    cached_input: 0.25
    output: 15.00
"""


def _sdk(gw: Gateway, key: str, model: str = "openai:table-model") -> openai.OpenAI:
    client = GatewayClient(gw.url)
    client.register_run(f"{key}~a1", key, 11, model)
    return openai.OpenAI(base_url=client.base_url(f"{key}~a1", "worker"), api_key="t",
                         max_retries=0)


@pytest.fixture
def table_gateway(live_gateway: Callable[..., Gateway], tmp_path: Path) -> Gateway:
    path = tmp_path / "prices.yaml"
    path.write_text(NO_LIMIT_PRICES)
    return live_gateway(prices_path=path, budget_usd=50.0)


def test_I51_a_negative_token_count_is_no_usage_never_a_credit(
    table_gateway: Gateway, upstream: FakeUpstream
) -> None:
    sdk = _sdk(table_gateway, "neg")
    ask: dict[str, Any] = {"model": "table-model", "max_completion_tokens": 50,
                           "messages": [{"role": "user", "content": "q"}]}
    sdk.chat.completions.create(**ask)
    before = GatewayClient(table_gateway.url).stats().budget
    upstream.queue(Step("negative_usage"))
    sdk.chat.completions.create(**ask)
    after = GatewayClient(table_gateway.url).stats().budget
    assert after.spent_usd >= before.spent_usd > 0  # nothing credited back
    assert after.unknown_cost_calls == before.unknown_cost_calls + 1  # its worst case kept


def test_I51_a_call_without_an_output_limit_is_sent_with_the_one_it_is_held_at(
    live_gateway: Callable[..., Gateway], table_gateway: Gateway, upstream: FakeUpstream
) -> None:
    messages = [{"role": "user", "content": "q"}]
    _sdk(table_gateway, "nolimit").chat.completions.create(model="table-model",
                                                           messages=messages)  # type: ignore[arg-type]
    reserve = table_gateway.settings.reserve_output_tokens
    assert upstream.seen[-1].body["max_completion_tokens"] == reserve
    shipped = live_gateway(budget_usd=50.0)  # the shipped table names the model's limit
    _sdk(shipped, "shipped", "openai:gpt-5.6-terra").chat.completions.create(
        model="gpt-5.6-terra", messages=messages)  # type: ignore[arg-type]
    assert upstream.seen[-1].body["max_completion_tokens"] == 128_000
    _sdk(table_gateway, "own").chat.completions.create(
        model="table-model", messages=messages, max_tokens=40)  # type: ignore[arg-type]
    assert upstream.seen[-1].body["max_tokens"] == 40
    assert "max_completion_tokens" not in upstream.seen[-1].body  # its own limit, as sent


@pytest.mark.parametrize("extra", [
    {"service_tier": "priority"},
    {"service_tier": "scale"},
    {"audio": {"voice": "alloy", "format": "wav"}, "modalities": ["text", "audio"]},
    {"modalities": ["text", "audio"]},
    {"web_search_options": {}},
    {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "read it"},
        {"type": "file", "file": {"file_id": "file-abc123"}}]}]},
], ids=["priority", "scale", "audio", "modalities", "web_search", "file_part"])
def test_I51_a_request_the_table_cannot_price_is_refused_before_anything_is_held(
    table_gateway: Gateway, upstream: FakeUpstream, extra: dict[str, Any]
) -> None:
    sdk = _sdk(table_gateway, "unpriced")
    body: dict[str, Any] = {"model": "table-model", "max_completion_tokens": 20,
                            "messages": [{"role": "user", "content": "q"}], **extra}
    with pytest.raises(openai.BadRequestError) as refused:
        sdk.chat.completions.create(**body)
    assert refused.value.code == "sabot_unbudgetable_request"
    assert "cannot be held against the spend cap" in str(refused.value)
    assert upstream.seen == []
    budget = GatewayClient(table_gateway.url).stats().budget
    assert budget.spent_usd == 0.0 and budget.reserved_usd == 0.0


@pytest.mark.parametrize("tier", ["auto", "default", "flex"])
def test_I51_a_service_tier_at_or_below_the_tables_rates_is_sent(
    table_gateway: Gateway, upstream: FakeUpstream, tier: str
) -> None:
    _sdk(table_gateway, f"tier-{tier}").chat.completions.create(
        model="table-model", messages=[{"role": "user", "content": "q"}],  # type: ignore[arg-type]
        max_completion_tokens=20, service_tier=tier)  # type: ignore[arg-type]
    assert upstream.seen[-1].body["service_tier"] == tier


def test_I51_every_input_token_is_held_at_the_dearer_of_the_two_input_rates() -> None:
    table = PriceTable(models={"m": ModelPrice(input=1.0, cached_input=3.0, output=0.0)})
    assert table.ceiling("m", 1_000_000, 0) == pytest.approx(3.0)


def test_I51_one_ledger_reached_by_two_paths_is_one_file(tmp_path: Path) -> None:
    first = tmp_path / "a" / "spend-ledger.json"
    first.parent.mkdir()
    first.write_text("{}")
    second = tmp_path / "b" / "spend-ledger.json"
    second.parent.mkdir()
    os.link(first, second)  # the same file under another folder (as a bind mount shows it)
    assert _same_file(first, second)
    (tmp_path / "c").mkdir()
    assert not _same_file(first, tmp_path / "c" / "spend-ledger.json")


def test_I51_an_output_made_in_the_working_directory_spends_from_the_projects_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_sabot.session.gateway import ledger_dir

    monkeypatch.chdir(tmp_path)
    default = SimpleNamespace(spend_ledger=None)
    assert ledger_dir(default, Path("shard-2")) == (tmp_path / "reports").resolve()  # type: ignore[arg-type]
    assert ledger_dir(default, Path("shard-3")) == ledger_dir(default, Path("reports/wave-1"))  # type: ignore[arg-type]
    assert ledger_dir(default, tmp_path / "elsewhere" / "w1") == (tmp_path / "elsewhere").resolve()  # type: ignore[arg-type]
    named = SimpleNamespace(spend_ledger=str(tmp_path / "mine"))
    assert ledger_dir(named, Path("shard-2")) == (tmp_path / "mine").resolve()  # type: ignore[arg-type]
