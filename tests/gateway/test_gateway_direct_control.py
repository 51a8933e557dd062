"""A client holding its gateway's service calls the control routes directly (no loopback
HTTP for them): every answer and every refusal is the one the HTTP routes give."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest

from pytest_sabot.gateway import Gateway, GatewayClient
from pytest_sabot.gateway.client import GatewayError

REQUEST: Any = [{"role": "user", "content": "status?"}]


def _both(gateway: Gateway) -> tuple[GatewayClient, GatewayClient]:
    return GatewayClient(gateway.url), GatewayClient(gateway.url, service=gateway.service)


def _refusal(
    call: Callable[[GatewayClient], Any], client: GatewayClient
) -> tuple[int, str | None, str]:
    with pytest.raises(GatewayError) as caught:
        call(client)
    return caught.value.status, caught.value.code, caught.value.message


def _without_keys(value: Any) -> Any:
    """A control answer with the fields that differ between two runs by design (the run
    keys and credentials the gateway draws, the times) taken out."""
    if isinstance(value, dict):
        return {k: _without_keys(v) for k, v in value.items()
                if k not in {"run_key", "api_key", "t", "started", "finished", "latency_ms",
                             "request_id"}}
    if isinstance(value, list):
        return [_without_keys(v) for v in value]
    return value


def _one_run(client: GatewayClient, label: str, calls: int) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    answers["register"] = client.register_run(f"{label}~a1", label, 11, "script:terra")
    answers["grant"] = client.grant(f"{label}~a1", "worker").model_dump(mode="json")
    sdk = openai.OpenAI(base_url=client.base_url(f"{label}~a1", "worker"), api_key="run",
                        max_retries=0)
    for _ in range(calls):
        sdk.chat.completions.create(model="gpt-5.6-terra", messages=REQUEST)
    answers["drain"] = [r.model_dump(mode="json") for r in client.drain(f"{label}~a1")]
    answers["drain again"] = [r.model_dump(mode="json") for r in client.drain(f"{label}~a1")]
    answers["close"] = [r.model_dump(mode="json") for r in client.close_run(f"{label}~a1")]
    return answers


def test_direct_control_calls_answer_as_the_http_routes_do(gateway: Gateway) -> None:
    http, direct = _both(gateway)
    by_http = _one_run(http, "cell-a", 2)
    by_direct = _one_run(direct, "cell-a", 2)
    assert len(by_http["drain"]) == 2 and by_http["drain again"] == []
    assert _without_keys(by_direct) == _without_keys(by_http)
    # The agents' model calls still go over HTTP: both runs were answered and recorded.
    assert [r["call_index"] for r in by_direct["drain"]] == [0, 1]


def test_direct_control_calls_are_refused_as_the_http_routes_refuse(gateway: Gateway) -> None:
    http, direct = _both(gateway)
    http.register_run("taken~a1", "cell-t", 11, "script:terra")
    cases: list[Callable[[GatewayClient], Any]] = [
        lambda c: c.register_run("taken~a1", "cell-t", 11, "script:terra"),
        lambda c: c.drain("never-registered"),
        lambda c: c.close_run("never-registered"),
        lambda c: c.grant("never-registered", "worker"),
        lambda c: c.register_run("bad~a1", "cell-b", 11, "nosuch:model"),
        lambda c: c.register_run("bad~a1", "", 11, "script:terra"),
        lambda c: c._call("POST", "/sabot/no/such/route", {}),
        lambda c: c._call("GET", "/sabot/runs"),
    ]
    refusals = [_refusal(case, http) for case in cases]
    assert [_refusal(case, direct) for case in cases] == refusals
    assert [status for status, _, _ in refusals] == [409, 404, 404, 404, 400, 400, 404, 404]


def test_direct_control_calls_read_the_same_stats(gateway: Gateway) -> None:
    http, direct = _both(gateway)
    _one_run(http, "cell-s", 1)
    assert direct._call("GET", "/sabot/stats") == http._call("GET", "/sabot/stats")
    assert direct._call("GET", "/sabot/health") == {"ok": True}


def test_direct_control_calls_send_no_request_to_the_gateway(gateway: Gateway) -> None:
    """Counted at the server: a direct client's control calls never reach its handler,
    while an HTTP client's each do."""
    seen: list[str] = []
    handler: Any = gateway._server.RequestHandlerClass
    original = handler._control

    def counting(self: Any, method: str, parts: list[str], body: bytes) -> None:
        seen.append("/".join(parts))
        original(self, method, parts, body)

    handler._control = counting
    try:
        http, direct = _both(gateway)
        direct.register_run("quiet~a1", "cell-q", 11, "script:terra")
        direct.drain("quiet~a1")
        direct.close_run("quiet~a1")
        assert seen == []
        http.register_run("loud~a1", "cell-l", 11, "script:terra")
        http.drain("loud~a1")
        assert seen == ["runs", f"runs/{http._key('loud~a1')}/drain"]
    finally:
        handler._control = original
