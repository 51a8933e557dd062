"""Malformed requests get an OpenAI-shaped error with 400/404, never a crash or a hang."""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import pytest
from gateway_fakes import ScriptedBackend

from pytest_sabot.gateway import (
    Gateway,
    GatewayClient,
    GatewayError,
    GatewaySettings,
    start_gateway,
)
from pytest_sabot.gateway.server import LISTEN_BACKLOG, GatewayServer


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


# --------------------------------------------------------------------------- issue 21, item 6

SMALL_LIMIT = 4096


@pytest.fixture
def small_gateway() -> Iterator[Gateway]:
    """A keyless gateway whose body limit is 4 KiB, so an overrun is cheap to send."""
    gw = start_gateway(
        GatewaySettings(client_timeout_s=5.0, max_body_bytes=SMALL_LIMIT),
        backends={"script": ScriptedBackend()},
    )
    yield gw
    gw.close()


def _raw(gateway: Gateway, path: str, head: str, body: bytes, rest: bytes = b"") -> str:
    """Send one request byte for byte; the status line and body of the answer. ``rest``
    is sent only if the server has not answered ``body`` within two seconds (a server
    that is still reading)."""
    netloc = gateway.origin.removeprefix("http://")
    host, port = netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {netloc}\r\nContent-Type: application/json\r\n"
            f"{head}\r\n".encode() + body
        )
        if rest and not select.select([sock], [], [], 2.0)[0]:
            sock.sendall(rest)
            sock.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received.decode("utf-8", "replace")


def _chat_path(gateway: Gateway) -> str:
    client = GatewayClient(gateway.url)
    client.register_run("chunks~a1", "chunks", 11, "script:terra")
    return client.base_url("chunks~a1", "worker").removeprefix(gateway.origin) + (
        "/chat/completions"
    )


GOOD = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()


@pytest.mark.parametrize(
    "size",
    ["-1", "-0", "+10", "0x10", "1_0", " 10", "", "zz", "1" * 17, "10\x00"],
    ids=["minus-one", "minus-zero", "plus", "hex-prefix", "underscore", "leading-space",
         "empty", "not-hex", "seventeen-digits", "nul"],
)
def test_21_6_negative_and_malformed_chunk_sizes_are_refused(
    small_gateway: Gateway, size: str
) -> None:
    path = _chat_path(small_gateway)
    # Before: int(size, 16) took '-1', and read(-1) read to the end of the stream, so a
    # body four times the limit was served (200).
    overrun = GOOD[:-1] + b" " * (4 * SMALL_LIMIT) + b"}"
    answer = _raw(small_gateway, path, "Transfer-Encoding: chunked\r\n",
                  f"{size}\r\n".encode(), overrun)
    assert answer.startswith("HTTP/1.1 400"), answer[:200]
    assert '"code":"invalid_body"' in answer
    # refused at the size line, before a byte of the data was read
    assert "a chunk size must be 1 to 16 hexadecimal digits" in answer


def test_21_6_a_chunked_body_over_the_limit_is_refused_before_it_is_read(
    small_gateway: Gateway,
) -> None:
    path = _chat_path(small_gateway)
    answer = _raw(small_gateway, path, "Transfer-Encoding: chunked\r\n",
                  b"800\r\n" + b"x" * 0x800 + b"\r\n" + b"800\r\n" + b"x" * 0x800 + b"\r\n"
                  + b"10\r\n", b"x" * 0x10 + b"\r\n0\r\n\r\n")
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert '"code":"body_too_large"' in answer


@pytest.mark.slow
def test_21_6_a_well_formed_chunked_body_is_served(small_gateway: Gateway) -> None:
    path = _chat_path(small_gateway)
    half = len(GOOD) // 2
    body = (f"{half:x};ext=1\r\n".encode() + GOOD[:half] + b"\r\n"
            + f"{len(GOOD) - half:X} \r\n".encode() + GOOD[half:] + b"\r\n"
            + b"0\r\nX-Trailer: yes\r\n\r\n")
    answer = _raw(small_gateway, path, "Transfer-Encoding: chunked\r\n", body)
    assert answer.startswith("HTTP/1.1 200"), answer[:300]


@pytest.mark.parametrize("length", ["-1", "+5", "5, 5", "0x10", " "])
def test_21_6_a_content_length_that_is_not_a_whole_number_is_refused(
    small_gateway: Gateway, length: str
) -> None:
    path = _chat_path(small_gateway)
    answer = _raw(small_gateway, path, f"Content-Length: {length}\r\n", b"", GOOD)
    assert answer.startswith("HTTP/1.1 400"), answer[:200]
    assert "Content-Length is not a whole number" in answer


def test_21_6_the_listen_backlog_holds_a_burst_of_callers() -> None:
    """A server that is not accepting yet keeps every connect of a burst in its backlog;
    with the stdlib's 5 the sixth and later ones are dropped and wait for a SYN
    retransmit (the one-second p90 the issue measured)."""
    server = GatewayServer(("127.0.0.1", 0), BaseHTTPRequestHandler)  # never accepts
    callers = 300
    socks = []
    try:
        for _ in range(callers):
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(server.server_address[:2])
            socks.append(sock)
        pending = set(socks)
        deadline = time.monotonic() + 20
        while pending and time.monotonic() < deadline:
            _, writable, _ = select.select([], list(pending), [], 0.5)
            for sock in writable:
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    pending.discard(sock)
        assert not pending, f"{len(pending)} of {callers} connects still waiting"
        assert callers <= LISTEN_BACKLOG
    finally:
        for sock in socks:
            sock.close()
        server.server_close()
