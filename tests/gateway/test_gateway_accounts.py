"""Session accounts (issue 21, item 1; SPEC.md I116): a session that uses a gateway it did
not start registers its own cap and ledger there, and every call of its runs is held
against that cap as well as the gateway's own."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import openai
import pytest
from gateway_fakes import FakeUpstream

from pytest_sabot.gateway import Gateway, GatewayClient, GatewayError
from pytest_sabot.gateway.client import with_account
from pytest_sabot.gateway.ledger import read_ledger

PRICES = """\
version: 1
models:
  pricey-model:
    input: 100.0
    cached_input: 10.0
    output: 400.0
"""


def _prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(PRICES)
    return path


def _calls(client: GatewayClient, label: str, n: int) -> list[str]:
    sdk = openai.OpenAI(base_url=client.base_url(label, "worker"), api_key="t", max_retries=0)
    outcomes = []
    for i in range(n):
        try:
            sdk.chat.completions.create(
                model="pricey-model",
                messages=[{"role": "user", "content": f"q{i}"}],
                max_completion_tokens=50,
            )
            outcomes.append("ok")
        except openai.APIStatusError as exc:
            outcomes.append(f"{exc.status_code} {exc.code}")
    return outcomes


@pytest.mark.slow
def test_I116_a_session_account_holds_its_own_cap_below_the_gateways(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, tmp_path: Path
) -> None:
    gw = live_gateway(
        prices_path=_prices(tmp_path), budget_usd=500.0, spend_ledger_dir=tmp_path / "gw"
    )
    session_ledger = tmp_path / "session-reports"
    answer = GatewayClient(gw.url).register_session("run-1", 0.2, str(session_ledger))
    client = GatewayClient(with_account(gw.url, answer.account))
    client.register_run("c~a1", "c", 11, "openai:pricey-model")
    outcomes = _calls(client, "c~a1", 40)
    first = outcomes.index("402 sabot_budget_exhausted")
    assert first > 0 and set(outcomes[first:]) == {"402 sabot_budget_exhausted"}
    assert len(upstream.seen) == first  # nothing past the session's cap was forwarded
    mine = client.account_stats()
    assert mine.budget.budget_usd == 0.2 and mine.budget.exhausted
    assert 0 < mine.budget.spent_usd <= 0.2
    assert mine.calls == 40 and mine.upstream_calls == first and mine.errors == 40 - first
    # The session's own ledger holds its spend under its run id; the gateway's cap is
    # far from reached and its breaker stays closed for everyone else.
    ledger = read_ledger(session_ledger)
    assert ledger.spent_usd == pytest.approx(mine.budget.spent_usd)
    assert {g.session for g in ledger.gateways.values()} == {"run-1"}
    assert read_ledger(tmp_path / "gw").spent_usd == pytest.approx(mine.budget.spent_usd)
    assert GatewayClient(gw.url).stats().budget.exhausted is False


def test_I116_one_ledger_file_for_both_caps_counts_each_call_once(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, tmp_path: Path
) -> None:
    shared = tmp_path / "reports"
    gw = live_gateway(prices_path=_prices(tmp_path), budget_usd=500.0, spend_ledger_dir=shared)
    answer = GatewayClient(gw.url).register_session("run-2", 0.2, str(shared))
    client = GatewayClient(with_account(gw.url, answer.account))
    client.register_run("d~a1", "d", 11, "openai:pricey-model")
    outcomes = _calls(client, "d~a1", 30)
    served = outcomes.count("ok")
    billed = sum(r.cost_usd or 0 for r in client.drain("d~a1"))
    assert served == len(upstream.seen) > 0
    assert read_ledger(shared).spent_usd == pytest.approx(billed)  # not twice
    assert billed <= 0.2


def test_I116_the_gateways_own_cap_still_binds_a_session_with_a_larger_one(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, tmp_path: Path
) -> None:
    gw = live_gateway(prices_path=_prices(tmp_path), budget_usd=0.1)
    answer = GatewayClient(gw.url).register_session("run-3", 50.0, str(tmp_path / "s"))
    client = GatewayClient(with_account(gw.url, answer.account))
    client.register_run("e~a1", "e", 11, "openai:pricey-model")
    outcomes = _calls(client, "e~a1", 20)
    assert outcomes[-1] == "402 sabot_budget_exhausted"
    assert GatewayClient(gw.url).stats().budget.spent_usd <= 0.1
    assert client.account_stats().budget.exhausted  # the session sees why it stopped
    assert read_ledger(tmp_path / "s").spent_usd <= 0.1


def test_I116_registration_is_idempotent_and_a_different_cap_is_refused(
    live_gateway: Callable[..., Gateway], tmp_path: Path
) -> None:
    client = GatewayClient(live_gateway().url)
    first = client.register_session("run-4", 3.0, str(tmp_path))
    again = client.register_session("run-4", 3.0, str(tmp_path))
    assert first.account == again.account  # every worker of a session gets the same one
    with pytest.raises(GatewayError) as err:
        client.register_session("run-4", 30.0, str(tmp_path))
    assert err.value.status == 409 and err.value.code == "sabot_session_exists"
    with pytest.raises(GatewayError) as err:
        client.register_session("run-5", 3.0, "relative/dir")
    assert err.value.status == 400 and "absolute" in err.value.message
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "spend-ledger.json").write_text("{not json")
    with pytest.raises(GatewayError) as err:
        client.register_session("run-6", 3.0, str(tmp_path / "broken"))
    assert err.value.status == 400 and "spend-ledger.json" in err.value.message


def test_I116_a_run_naming_an_unknown_account_is_refused(
    live_gateway: Callable[..., Gateway],
) -> None:
    gw = live_gateway()
    client = GatewayClient(with_account(gw.url, "no-such-account"))
    with pytest.raises(GatewayError) as err:
        client.register_run("f~a1", "f", 11, "openai:gpt-5.6-terra")
    assert err.value.status == 404 and err.value.code == "sabot_unknown_account"
    with pytest.raises(GatewayError):
        client.account_stats()


def test_I116_the_account_travels_in_the_url_and_nothing_else_changes(
    live_gateway: Callable[..., Gateway],
) -> None:
    gw = live_gateway()
    url = with_account(gw.url, "abc")
    client = GatewayClient(url)
    assert client.account == "abc" and client.url == gw.url
    assert GatewayClient(gw.url).account is None
    assert json.dumps(client.base_url("x~a1", "worker")).count("account") == 0


def test_I116_a_live_sessions_spend_comes_from_its_ledger_when_no_gateway_can_tell(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, tmp_path: Path
) -> None:
    from pytest_sabot.session.gateway import account_spend, ledger_spend

    ledger = tmp_path / "reports"
    gw = live_gateway(prices_path=_prices(tmp_path), budget_usd=500.0)
    answer = GatewayClient(gw.url).register_session("run-7", 5.0, str(ledger))
    url = with_account(gw.url, answer.account)
    client = GatewayClient(url)
    client.register_run("g~a1", "g", 11, "openai:pricey-model")
    assert _calls(client, "g~a1", 3) == ["ok"] * 3
    asked = account_spend(url)
    assert asked is not None and asked["calls"] == 3 and asked["upstream_calls"] == 3
    gone = with_account(f"http://127.0.0.1:9/{'s' * 43}", answer.account)
    assert account_spend(gone) is None  # a gateway that cannot be asked
    kept = ledger_spend(ledger, "run-7")
    assert kept is not None and kept["calls"] == 3
    assert kept["budget"]["spent_usd"] == pytest.approx(asked["budget"]["spent_usd"])
    assert ledger_spend(ledger, "another-session") is None
