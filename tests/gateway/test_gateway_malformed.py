"""Malformed requests get an OpenAI-shaped error with 400/404, never a crash or a hang."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from pytest_sabot.gateway import Gateway, GatewayClient, GatewayError


def _post(url: str, content: bytes) -> httpx.Response:
    return httpx.post(
        url, content=content, headers={"Content-Type": "application/json"}, timeout=10
    )


def _assert_openai_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status
    assert response.headers["x-should-retry"] == "false"
    body = response.json()
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["code"] == code
    return body["error"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("content", "code", "param"),
    [
        (b"{not json", "invalid_json", None),
        (b"[1, 2]", "invalid_json", None),
        (json.dumps({"model": "m"}).encode(), "invalid_request", "messages"),
        (json.dumps({"model": "m", "messages": []}).encode(), "invalid_request", "messages"),
        (
            json.dumps({"messages": [{"role": "user", "content": "x"}]}).encode(),
            "invalid_request",
            "model",
        ),
        (b"\xff\xfe", "invalid_json", None),
    ],
    ids=[
        "bad-json",
        "not-an-object",
        "missing-messages",
        "empty-messages",
        "missing-model",
        "not-utf8",
    ],
)
def test_malformed_chat_request_gets_400_openai_error(
    client: GatewayClient, run: Callable[..., str], content: bytes, code: str, param: str | None
) -> None:
    key = run()
    error = _assert_openai_error(
        _post(client.base_url(key, "worker") + "/chat/completions", content), 400, code
    )
    assert error["param"] == param
    assert client.drain(key) == []


def test_unknown_run_gets_404_that_does_not_echo_the_key(client: GatewayClient) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    error = _assert_openai_error(
        _post(client.base_url("ghost~a1", "worker") + "/chat/completions", body),
        404,
        "sabot_unknown_run",
    )
    assert "unknown run" in error["message"] and "ghost" not in error["message"]


def test_unknown_route_gets_404(gateway: Gateway) -> None:
    _assert_openai_error(_post(gateway.url + "/v1/chat/completions", b"{}"), 404, "unknown_route")
    _assert_openai_error(httpx.get(gateway.url + "/sabot/nothing"), 404, "unknown_route")


def test_any_prefix_ending_in_chat_completions_is_served(
    client: GatewayClient, run: Callable[..., str], gateway: Gateway
) -> None:
    key = run()
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    agent_root = client.base_url(key, "worker").removesuffix("/v1")
    url = f"{agent_root}/openai/deployments/x/chat/completions"
    assert _post(url, body).status_code == 200


@pytest.mark.slow
def test_body_shorter_than_content_length_does_not_hang_the_server(
    client: GatewayClient, run: Callable[..., str], gateway: Gateway
) -> None:
    key = run()
    netloc = gateway.origin.removeprefix("http://")
    host, port = netloc.split(":")
    path = client.base_url(key, "worker").removeprefix(gateway.origin) + "/chat/completions"
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {netloc}\r\n"
            "Content-Type: application/json\r\nContent-Length: 500\r\n\r\n".encode()
            + b'{"model": "m"'
        )
        received = b""
        while chunk := sock.recv(65536):  # the server closes the connection after answering
            received += chunk
        answer = received.decode()
    assert answer.startswith("HTTP/1.1 400")
    assert '"code":"invalid_body"' in answer
    # and the server still answers afterwards
    good = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    assert _post(client.base_url(key, "worker") + "/chat/completions", good).status_code == 200


def test_registration_errors_name_the_field(client: GatewayClient) -> None:
    with pytest.raises(GatewayError) as err:
        client.register_run("k~a1", "k", 1, "nonsense")
    assert err.value.status == 400 and err.value.code == "sabot_unknown_model"
    with pytest.raises(GatewayError) as err:
        client.register_run("k~a1", "k", 1, "mystery:model")
    assert "unknown backend 'mystery'" in err.value.message
    with pytest.raises(GatewayError) as err:
        client.register_run("k~a1", "k", 1, "sim", {"agent": "w", "from_call": -1})
    assert err.value.code == "invalid_registration" and "downgrade.from_call" in err.value.message


def test_registering_a_run_twice_is_refused(client: GatewayClient, run: Callable[..., str]) -> None:
    key = run("script:x", cell_id="dup")
    with pytest.raises(GatewayError) as err:
        client.register_run(key, "dup", 11, "script:x")
    assert err.value.status == 409


def test_live_model_refused_without_explicit_opt_in(client: GatewayClient) -> None:
    with pytest.raises(GatewayError) as err:
        client.register_run("live~a1", "live", 11, "openai:gpt-5.6-terra")
    assert err.value.code == "sabot_live_not_enabled"


def test_closed_run_is_unknown_afterwards(client: GatewayClient, run: Callable[..., str]) -> None:
    key = run()
    assert client.close_run(key) == []
    with pytest.raises(GatewayError) as err:
        client.drain(key)
    assert err.value.status == 404
