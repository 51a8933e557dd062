"""The HTTP face of the gateway: a threaded stdlib server on 127.0.0.1.

Every request carries the session secret ``S`` drawn when the gateway starts: agent routes
as the first path segment (it is part of each agent's base URL), control routes in the
``X-Sabot-Secret`` header. The gateway's URL, ``http://127.0.0.1:<port>/<S>``, is the one
string the harness passes around; :class:`~pytest_sabot.gateway.client.GatewayClient`
splits it.

Routes:
  POST /<S>/run/<run_key>/agent/<agent>/<any prefix>/chat/completions   chat completions
  GET  /<S>/run/<run_key>/agent/<agent>/<any prefix>/models            model list probe
  POST /sabot/sessions              a session's own cap (SessionRegistration -> SessionRegistered)
  GET  /sabot/sessions/<account>    that session's calls and spend (GatewayStats)
  POST /sabot/runs                  register a run (RunRegistration -> RunRegistered)
  POST /sabot/runs/<run_key>/grant  a credential for one agent of the run (RunGrant -> RunGranted)
  POST /sabot/runs/<run_key>/drain  exchanges since the last drain
  POST /sabot/runs/<run_key>/close  forget the run (returns undrained exchanges)
  GET  /sabot/stats                 spend, calls, budget state
  GET  /sabot/health                liveness

The scoped door, for pipelines outside the harness (a trusted agent's child, an MCP client):
  POST /v1/chat/completions         as one agent of one run, named by the bearer credential
  GET  /v1/models                   that run's model
It takes a credential from ``/grant`` as its bearer token and nothing else: no other route
answers a credential, and a credential opens no other run.

Before anything else a request that looks like a browser's is refused (403 for an
``Origin`` or ``Sec-Fetch-*`` header or a ``Host`` other than the gateway's own address and
port, 415 for a POST whose body is not ``application/json``); then a request without the
secret gets 401 (none given) or 403 (a wrong one). A refused request is not routed: nothing
is forwarded, recorded or charged. Every error body is OpenAI-shaped, never echoes the
request path, and carries ``x-should-retry: false``: the gateway is the one layer that
retries upstream failures.

The stdlib server stays because it is measured no slower than uvicorn + starlette serving
the same service (``bench/gateway_server.py``) and needs no event loop beside the
threaded service.
"""

from __future__ import annotations

import contextlib
import hmac
import re
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, unquote

from pytest_sabot.gateway.backends.base import Backend
from pytest_sabot.gateway.control import control
from pytest_sabot.gateway.protocol import encode_body, error_body
from pytest_sabot.gateway.routing import parse_agent_path
from pytest_sabot.gateway.secrets import new_secret, redact_in_logs
from pytest_sabot.gateway.service import SCOPED_PATH, ControlError, GatewayService, Served
from pytest_sabot.gateway.settings import GatewaySettings

SECRET_HEADER = "X-Sabot-Secret"
_BROWSER_HEADERS = ("Origin", "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest")
_DISCARD_LIMIT = 1024 * 1024  # a refused request's body is read (and dropped) up to this
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_DECIMAL = re.compile(r"[0-9]{1,19}")
_LINE_LIMIT = 1024  # a chunk size line (with its extensions) or a trailer line
_MAX_TRAILERS = 32
LISTEN_BACKLOG = 1024
"""Connections the kernel holds for the gateway until it accepts them (capped by
net.core.somaxconn). Every agent of every cell in flight connects at once: an xdist worker's
cells in flight, their agents and the threads a framework runs tools and reviews in, and,
for a standalone gateway, every session and worker sharing it. The stdlib's default of 5
turns a burst into SYN retransmits (a one-second wait per dropped connect)."""


class _BadRequest(Exception):
    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class GatewayServer(ThreadingHTTPServer):
    """The listening server (its backlog sized for a wave's callers, LISTEN_BACKLOG)."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG
    service: GatewayService
    secret: str
    host_header: str  # the only Host a request may carry, e.g. '127.0.0.1:8431'


def _same(given: str | None, secret: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), secret.encode())


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave in separate writes
    server: GatewayServer

    def log_message(self, format: str, *args: Any) -> None:
        return  # request lines never reach a log (they carry run keys, not secrets, but
        # the gateway keeps stderr for the harness)

    # ------------------------------------------------------------------ io helpers

    def _read_body(self) -> bytes:
        limit = self.server.service.settings.max_body_bytes
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked(limit)
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            return b""
        if not _DECIMAL.fullmatch(length_text.strip()):
            raise _BadRequest(400, "Content-Length is not a whole number", "invalid_body")
        length = int(length_text)
        if length > limit:
            raise _BadRequest(413, f"request body over {limit} bytes", "body_too_large")
        data = self.rfile.read(length)
        if len(data) != length:
            raise _BadRequest(400, "request body shorter than Content-Length", "invalid_body")
        return data

    def _read_chunked(self, limit: int) -> bytes:
        """A chunked body (RFC 9112 7.1), strictly: a size is 1 to 16 hex digits (no sign,
        prefix, space or underscore), each chunk's data ends in CRLF, the trailer section
        is bounded; the limit is checked before a chunk is read."""
        chunks: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(_LINE_LIMIT + 1)
            if not line.endswith(b"\n"):
                raise _BadRequest(400, "truncated or overlong chunk size line", "invalid_body")
            size_text = line.split(b";", 1)[0].rstrip(b"\r\n").rstrip(b" \t")
            if not _HEX.fullmatch(size_text):
                raise _BadRequest(
                    400, "a chunk size must be 1 to 16 hexadecimal digits", "invalid_body"
                )
            size = int(size_text, 16)
            if size == 0:
                break
            if total + size > limit:
                raise _BadRequest(413, f"request body over {limit} bytes", "body_too_large")
            data = self.rfile.read(size)
            if len(data) != size or self.rfile.readline(3) not in (b"\r\n", b"\n"):
                raise _BadRequest(400, "a chunk is shorter than its size", "invalid_body")
            total += size
            chunks.append(data)
        for _ in range(_MAX_TRAILERS + 1):
            trailer = self.rfile.readline(_LINE_LIMIT + 1)
            if trailer in (b"\r\n", b"\n"):
                return b"".join(chunks)
            if not trailer.endswith(b"\n"):
                raise _BadRequest(400, "truncated chunked body", "invalid_body")
        raise _BadRequest(400, f"more than {_MAX_TRAILERS} trailer lines", "invalid_body")

    def _send(self, served: Served) -> None:
        self.send_response(served.status)
        self.send_header("Content-Type", served.content_type)
        self.send_header("Content-Length", str(len(served.body)))
        if served.content_type == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        if served.status >= 400:
            self.send_header("x-should-retry", "false")
        if self.close_connection:  # tell the client not to reuse this connection
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(served.body)
        self.wfile.flush()

    def _send_json(self, status: int, payload: Any) -> None:
        self._send(Served(status, encode_body(payload)))

    def _error(
        self,
        status: int,
        message: str,
        code: str,
        type_: str = "invalid_request_error",
    ) -> None:
        self._send_json(status, error_body(message, type_, code))

    # ------------------------------------------------------------------ dispatch

    def _refusal(self, method: str, path: str) -> tuple[int, str, str] | None:
        """Why this request is refused before routing (status, message, code), or None."""
        server = self.server
        if any(name in self.headers for name in _BROWSER_HEADERS):
            return 403, "requests from a web browser are refused", "sabot_browser_refused"
        if self.headers.get("Host") != server.host_header:
            return (
                403,
                "the Host header must name the gateway's own loopback address and port",
                "sabot_bad_host",
            )
        if method == "POST" and _media_type(self.headers.get("Content-Type")) != (
            "application/json"
        ):
            return 415, "request bodies must be Content-Type: application/json", "sabot_not_json"
        if path == SCOPED_PATH or path.startswith(SCOPED_PATH + "/"):
            return self._scoped_refusal()
        if path == "/sabot" or path.startswith("/sabot/"):
            given = self.headers.get(SECRET_HEADER)
            if given is None:
                return 401, f"the {SECRET_HEADER} header is missing", "sabot_no_secret"
            if not _same(given, server.secret):
                return 403, f"the {SECRET_HEADER} header is wrong", "sabot_bad_secret"
            return None
        segment = path.lstrip("/").split("/", 1)[0]
        if not _same(unquote(segment), server.secret):
            return (
                401,
                "this gateway needs its session secret as the first path segment",
                "sabot_no_secret",
            )
        return None

    def _scoped_refusal(self) -> tuple[int, str, str] | None:
        """The scoped door takes a run's credential as its bearer token, nothing else."""
        auth = self.headers.get("Authorization") or ""
        if not auth.startswith("Bearer "):
            return 401, "this door needs a run's credential as its bearer token", (
                "sabot_no_credential"
            )
        if self.server.service.granted(auth.removeprefix("Bearer ").strip()) is None:
            return 401, "this credential opens no run here (unknown, or its run ended)", (
                "sabot_bad_credential"
            )
        return None

    def _discard_body(self) -> None:
        """Read a refused request's body so the answer is not lost to a connection reset."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return
        if 0 < length <= _DISCARD_LIMIT:
            with contextlib.suppress(OSError):
                self.rfile.read(length)

    def _handle(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        refusal = self._refusal(method, path)
        if refusal is not None:
            status, message, code = refusal
            self.close_connection = True
            self._discard_body()
            with contextlib.suppress(OSError):
                self._error(status, message, code, "authentication_error")
            return
        scrub = self.server.service.scrubber.text
        try:
            body = self._read_body() if method == "POST" else b""
        except (_BadRequest, ValueError, OSError) as exc:
            status = exc.status if isinstance(exc, _BadRequest) else 400
            code = exc.code if isinstance(exc, _BadRequest) else "invalid_body"
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._error(status, scrub(f"could not read the request body: {exc}"), code)
            return
        try:
            self._route(method, path, body)
        except ControlError as exc:
            self._send_json(exc.status, exc.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except BaseException as exc:  # a dying handler still answers, then ends
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._error(
                    500,
                    scrub(f"gateway error: {type(exc).__name__}: {exc}"),
                    "sabot_internal_error",
                    "server_error",
                )

    def _scoped(self, method: str, path: str, body: bytes) -> None:
        """The scoped door: one run's chat completions and model list, as one agent."""
        service = self.server.service
        auth = self.headers.get("Authorization") or ""
        grant = service.granted(auth.removeprefix("Bearer ").strip())
        if grant is None:  # the run ended between the check and here
            self._error(401, "this credential opens no run here", "sabot_bad_credential",
                        "authentication_error")
            return
        run_key, agent = grant
        rest = path[len(SCOPED_PATH):].rstrip("/")
        if method == "POST" and rest == "/chat/completions":
            self._send(service.chat(run_key, agent, body, auth))
        elif method == "GET" and rest == "/models":
            self._send_json(200, service.models(run_key))
        elif method == "GET" and rest.startswith("/models/"):
            self._send_json(200, service.models(run_key)["data"][0])
        else:
            self._error(
                404,
                f"no route for {method} here: this door serves POST {SCOPED_PATH}/chat/"
                f"completions and GET {SCOPED_PATH}/models",
                "unknown_route",
            )

    def _route(self, method: str, path: str, body: bytes) -> None:
        service = self.server.service
        if path == SCOPED_PATH or path.startswith(SCOPED_PATH + "/"):
            self._scoped(method, path, body)
            return
        if path == "/sabot" or path.startswith("/sabot/"):
            parts = [unquote(p) for p in path.strip("/").split("/")]
            self._control(method, parts[1:], body)
            return
        rest = "/" + path.lstrip("/").partition("/")[2]  # after the secret segment
        route = parse_agent_path(rest)
        if route is not None:
            if method == "POST" and route.rest.rstrip("/").endswith("/chat/completions"):
                self._send(
                    service.chat(
                        route.run_key, route.agent, body, self.headers.get("Authorization")
                    )
                )
                return
            if method == "GET" and route.rest.rstrip("/").endswith("/models"):
                self._send_json(200, service.models(route.run_key))
                return
            if method == "GET" and "/models/" in route.rest:
                listed = service.models(route.run_key)["data"]
                self._send_json(200, listed[0])
                return
        self._error(
            404,
            f"no route for {method} here: the gateway serves POST .../chat/completions and "
            "GET .../models under /<secret>/run/<run key>/agent/<agent>/",
            "unknown_route",
        )

    def _control(self, method: str, parts: list[str], body: bytes) -> None:
        self._send_json(*control(self.server.service, method, parts, body))

    def do_POST(self) -> None:
        self._handle("POST")

    def do_GET(self) -> None:
        self._handle("GET")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")


class Gateway:
    """A running gateway; ``url`` is its root (secret included), ``close()`` stops it."""

    def __init__(self, settings: GatewaySettings, backends: Mapping[str, Backend] | None) -> None:
        self.settings = settings
        self.secret = new_secret()
        redact_in_logs(self.secret)
        self.service = GatewayService(settings, backends, secret=self.secret)
        handler = type("SabotGatewayHandler", (_Handler,), {"timeout": settings.client_timeout_s})
        self._server = GatewayServer((settings.host, settings.port), handler)
        self._server.service = self.service
        self._server.secret = self.secret
        host, port = self._server.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host
        netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self._server.host_header = netloc
        self.origin = f"http://{netloc}"
        self.url = f"{self.origin}/{self.secret}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="sabot-gateway",
            daemon=True,
        )
        self._thread.start()
        self._closed = False

    def __repr__(self) -> str:  # never shows the secret
        return f"Gateway({self.origin})"

    def base_url(self, run_key: str, agent: str) -> str:
        """The base URL of one agent of an open run (``run_key``: its key or its label)."""
        key = self.service.key_of(run_key) or run_key
        return f"{self.url}/run/{quote(key, safe='')}/agent/{quote(agent, safe='')}/v1"

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self.service.close()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_gateway(
    settings: GatewaySettings | None = None, backends: Mapping[str, Backend] | None = None
) -> Gateway:
    """Start a gateway in a background thread (extra ``backends`` add model schemes)."""
    chosen = settings or GatewaySettings()
    if chosen.host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"the gateway listens on loopback only, not {chosen.host!r}")
    return Gateway(chosen, backends)
