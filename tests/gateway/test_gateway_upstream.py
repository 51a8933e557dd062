"""Upstream reliability, one layer only: retry what is transient, pass through what is not,
and throttle under rate limiting."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import openai
import pytest
from gateway_fakes import FakeUpstream, Step

from pytest_sabot.gateway import Gateway, GatewayClient
from pytest_sabot.gateway.backends.openai_upstream import RetryPolicy, retry_after_seconds


def _live(gw: Gateway, key: str = "c1~a1") -> tuple[GatewayClient, openai.OpenAI]:
    client = GatewayClient(gw.url)
    client.register_run(key, key.split("~")[0], 11, "openai:gpt-5.6-terra")
    sdk = openai.OpenAI(base_url=client.base_url(key, "worker"), api_key="t", max_retries=0)
    return client, sdk


def _ask(sdk: openai.OpenAI, text: str = "hello") -> str:
    reply = sdk.chat.completions.create(
        model="gpt-5.6-terra", messages=[{"role": "user", "content": text}]
    )
    return reply.choices[0].message.content or ""


def test_retry_on_429_storm_honouring_retry_after(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    gw = live_gateway()
    client, sdk = _live(gw)
    storm = Step("status", 429, headers={"retry-after-ms": "5", "Retry-After": "1"})
    upstream.queue(storm, storm, storm, storm)
    assert _ask(sdk).startswith("[gpt-5.6-terra]")
    assert len(upstream.seen) == 5
    [record] = client.drain("c1~a1")
    assert record.error is None and record.cost_usd is not None


def test_concurrency_limit_halves_under_rate_limiting_and_recovers_slowly(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    gw = live_gateway(max_connections=8, recover_after=2)
    client, sdk = _live(gw)
    upstream.queue(*[Step("status", 429, headers={"retry-after-ms": "1"})] * 3)
    _ask(sdk)
    assert client.stats().concurrency_limit == 1  # 8 -> 4 -> 2 -> 1
    for i in range(4):
        _ask(sdk, f"again {i}")
    assert client.stats().concurrency_limit == 3  # +1 per 2 successes


def test_retry_on_500_then_success(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    _, sdk = _live(live_gateway())
    upstream.queue(Step("status", 500), Step("status", 503))
    assert _ask(sdk).startswith("[gpt-5.6-terra]")
    assert len(upstream.seen) == 3


def test_insufficient_quota_is_never_retried_and_passed_through(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    client, sdk = _live(live_gateway())
    upstream.queue(Step("quota"))
    with pytest.raises(openai.RateLimitError) as err:
        _ask(sdk)
    assert err.value.code == "insufficient_quota"
    assert err.value.response.headers["x-should-retry"] == "false"
    assert len(upstream.seen) == 1
    [record] = client.drain("c1~a1")
    assert record.error is not None and record.cost_usd is None


def test_client_errors_are_passed_through_without_retry(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    _, sdk = _live(live_gateway())
    upstream.queue(Step("status", 400))
    with pytest.raises(openai.BadRequestError):
        _ask(sdk)
    assert len(upstream.seen) == 1


def test_retries_give_up_with_a_clear_502_after_max_retries(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    client, sdk = _live(live_gateway(max_retries=2))
    upstream.queue(*[Step("status", 500)] * 5)
    with pytest.raises(openai.APIStatusError) as err:
        _ask(sdk)
    assert err.value.status_code == 502
    assert "after 3 attempts" in str(err.value)
    assert len(upstream.seen) == 3
    assert client.stats().errors == 1


def test_malformed_upstream_json_is_retried_and_its_cost_held_as_unknown(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    client, sdk = _live(live_gateway())
    upstream.queue(Step("malformed"))
    assert _ask(sdk).startswith("[gpt-5.6-terra]")
    assert len(upstream.seen) == 2
    budget = client.stats().budget
    assert budget.unknown_cost_calls == 1 and budget.reserved_usd > 0


def test_upstream_dropping_the_connection_mid_body_is_retried(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    _, sdk = _live(live_gateway())
    upstream.queue(Step("truncate"), Step("truncate"))
    assert _ask(sdk).startswith("[gpt-5.6-terra]")
    assert len(upstream.seen) == 3


def test_upstream_timeout_is_retried(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    _, sdk = _live(live_gateway(upstream_timeout_s=0.2))
    upstream.queue(Step("ok", delay_s=1.0))
    assert _ask(sdk).startswith("[gpt-5.6-terra]")
    assert len(upstream.seen) == 2


def test_missing_usage_is_recorded_as_unknown_cost_not_zero(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    client, sdk = _live(live_gateway())
    upstream.queue(Step("no_usage"))
    _ask(sdk)
    [record] = client.drain("c1~a1")
    assert record.cost_usd is None and record.prompt_tokens is None
    assert client.stats().budget.unknown_cost_calls == 1


def test_missing_api_key_is_a_clear_error(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    gw = live_gateway()
    monkeypatch.delenv("OPENAI_API_KEY")
    _, sdk = _live(gw)
    with pytest.raises(openai.AuthenticationError) as err:
        _ask(sdk)
    assert "OPENAI_API_KEY" in str(err.value)
    assert upstream.seen == []


def test_concurrent_calls_never_exceed_the_connection_limit(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    gw = live_gateway(max_connections=2)
    client, _ = _live(gw)
    upstream.queue(*[Step("ok", delay_s=0.05)] * 8)
    url = client.base_url("c1~a1", "worker") + "/chat/completions"

    def call(i: int) -> int:
        body = {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]}
        return httpx.post(url, json=body, timeout=30).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(call, range(8))) == [200] * 8
    assert upstream.max_in_flight <= 2


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.5"}, 0.5),
        ({}, None),
        ({"retry-after": "soon"}, None),
    ],
)
def test_retry_after_headers_are_read(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_seconds(httpx.Headers(headers)) == expected


def test_backoff_is_exponential_and_retry_after_wins_capped() -> None:
    policy = RetryPolicy(max_retries=5, backoff_base_s=0.5, backoff_max_s=4.0)
    assert [policy.delay(a, None) for a in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert policy.delay(0, 3.0) == 3.0
    assert policy.delay(0, 60.0) == 4.0


def test_gateway_errors_tell_client_sdks_not_to_retry_so_only_one_layer_retries(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    gw = live_gateway(max_retries=1)
    client = GatewayClient(gw.url)
    client.register_run("r~a1", "r", 11, "openai:gpt-5.6-terra")
    sdk = openai.OpenAI(base_url=client.base_url("r~a1", "worker"), api_key="t", max_retries=3)
    upstream.queue(*[Step("status", 503)] * 4)
    with pytest.raises(openai.APIStatusError):
        _ask(sdk)
    assert client.stats().calls == 1
    assert len(upstream.seen) == 2


def test_upstream_event_stream_breaking_off_with_an_error_is_retried(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream
) -> None:
    client, sdk = _live(live_gateway())
    upstream.queue(Step("midstream"))
    stream = sdk.chat.completions.create(
        model="gpt-5.6-terra", messages=[{"role": "user", "content": "hello"}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text.startswith("[gpt-5.6-terra]")
    assert len(upstream.seen) == 2
    assert all("stream" not in seen.body for seen in upstream.seen)
    [record] = client.drain("c1~a1")
    assert record.stream is True and record.error is None
