"""The guard in front of every route (an ASGI middleware): nothing reaches a page, a file
or a launch without passing it.

1. **Host**: the Host header must name this server (``127.0.0.1:PORT``, ``localhost:PORT``,
   or the ``--host`` given), so a site whose name was re-pointed at 127.0.0.1 (DNS
   rebinding) is refused even though the browser thinks it is talking to that site.
2. **Origin**: a request carrying an Origin other than this server's, or marked
   ``Sec-Fetch-Site: cross-site`` by the browser, is refused: no other page can read or
   drive this one.
3. **Token**: every request carries the access token, as ``?token=`` on the first visit
   (which sets an HttpOnly, SameSite=Strict cookie and redirects to the same URL without
   it, so the token leaves the address bar and never rides a Referer), then as the
   cookie; scripts may send ``Authorization: Bearer``. Compared in constant time.
4. **Changes**: only GET and HEAD read; the one method that changes anything is POST, and
   a POST must carry the CSRF token (form field ``csrf`` or header ``X-Sabot-CSRF``) and
   an Origin (or Referer) of this server. Its body is capped at :data:`MAX_BODY` bytes.

Every response gets the page's Content-Security-Policy (nothing loads from anywhere but
this server), ``frame-ancestors 'none'``, ``nosniff``, ``same-origin`` referrers (none
to another site) and ``no-store``.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from pytest_sabot.web.config import ServeConfig

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 64 * 1024
TOKEN_PARAM = "token"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-sabot-csrf"
READ_METHODS = ("GET", "HEAD")


def cookie_name(config: ServeConfig) -> str:
    """One cookie per port: browsers share cookies across the ports of a host."""
    return f"sabot_serve_{config.port}"


def _headers(scope: Scope) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in scope.get("headers") or []:
        name = key.decode("latin-1").lower()
        text = value.decode("latin-1")
        if name in found:
            text = found[name] + ("; " if name == "cookie" else ", ") + text
        found[name] = text
    return found


def _cookies(header: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name:
            found.setdefault(name, value)
    return found


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def security_headers(policy: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-security-policy", policy.encode("ascii")),
        (b"x-frame-options", b"DENY"),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"same-origin"),
        (b"cache-control", b"no-store"),
        (b"cross-origin-opener-policy", b"same-origin"),
        (b"cross-origin-resource-policy", b"same-origin"),
    ]


class Guard:
    """The ASGI middleware described in the module docstring."""

    def __init__(self, app: ASGIApp, config: ServeConfig, policy: str) -> None:
        self.app = app
        self.config = config
        self.policy = policy
        self.hosts = config.allowed_hosts()
        self.origins = config.allowed_origins()
        self.cookie = cookie_name(config)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = security_headers(self.policy)

        async def guarded_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        refusal = self.refusal(scope)
        if refusal is not None:
            status, text = refusal
            await _plain(guarded_send, status, text)
            return
        method = scope["method"]
        if method in READ_METHODS:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            if TOKEN_PARAM in query:  # the first visit: the cookie, then the bare URL
                await self._welcome(guarded_send, scope, query)
                return
            await self.app(scope, receive, guarded_send)
            return
        body, too_big = await _read_body(receive)
        if too_big:
            await _plain(guarded_send, 413, f"request body over {MAX_BODY} bytes")
            return
        problem = self.post_problem(scope, body)
        if problem is not None:
            await _plain(guarded_send, 403, problem)
            return
        await self.app(scope, _replay(body), guarded_send)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """Why a request is refused before any route sees it (None: it may pass)."""
        headers = _headers(scope)
        host = headers.get("host", "")
        if host not in self.hosts:
            names = ", ".join(sorted(self.hosts))
            return 403, (f"refused: Host {host!r} is not this server ({names}); a page of "
                         "another site whose name points here is not let in")
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins:
            return 403, f"refused: a request from another origin ({origin!r})"
        if headers.get("sec-fetch-site") == "cross-site":
            return 403, "refused: a cross-site request (the browser says another site made it)"
        if scope["method"] not in (*READ_METHODS, "POST"):
            return 405, f"refused: method {scope['method']} (GET reads, POST changes)"
        if not self.has_token(scope, headers):
            return 401, ("refused: no valid access token. Open the URL `sabot serve` printed "
                         "(it carries ?token=...); the page then keeps a cookie")
        return None

    def has_token(self, scope: Scope, headers: dict[str, str]) -> bool:
        token = self.config.token
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = query.get(TOKEN_PARAM, [])
        if scope["method"] in READ_METHODS and given and same(given[-1], token):
            return True
        cookie = _cookies(headers.get("cookie", "")).get(self.cookie)
        if cookie is not None and same(cookie, token):
            return True
        bearer = headers.get("authorization", "")
        return bearer.startswith("Bearer ") and same(bearer[7:].strip(), token)

    def post_problem(self, scope: Scope, body: bytes) -> str | None:
        """Why a POST is refused: no CSRF token, or not sent by a page of this server."""
        headers = _headers(scope)
        origin = headers.get("origin")
        if origin is None:
            referer = headers.get("referer")
            if referer is not None:
                parts = urlsplit(referer)
                origin = f"{parts.scheme}://{parts.netloc}"
        if origin is not None and origin not in self.origins:
            return f"refused: a change requested by another origin ({origin!r})"
        given = headers.get(CSRF_HEADER)
        if given is None and headers.get("content-type", "").startswith(
            "application/x-www-form-urlencoded"
        ):
            fields = parse_qs(body.decode("utf-8", "replace"))
            values = fields.get(CSRF_FIELD) or []
            given = values[-1] if values else None
        if given is None or not same(given, self.config.csrf):
            return "refused: a change without this server's CSRF token"
        return None

    async def _welcome(self, send: Send, scope: Scope, query: dict[str, list[str]]) -> None:
        rest = {k: v for k, v in query.items() if k != TOKEN_PARAM}
        target = scope.get("path", "/") + (("?" + urlencode(rest, doseq=True)) if rest else "")
        cookie = (f"{self.cookie}={self.config.token}; Path=/; HttpOnly; SameSite=Strict")
        await send({"type": "http.response.start", "status": 303, "headers": [
            (b"location", target.encode("latin-1")),
            (b"set-cookie", cookie.encode("latin-1")),
            (b"content-type", b"text/plain; charset=utf-8"),
        ]})
        await send({"type": "http.response.body", "body": b"signed in; see " +
                    target.encode("latin-1")})


async def _plain(send: Send, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"),
    ]})
    await send({"type": "http.response.body", "body": text.encode("utf-8")})


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return b"", True
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks), False


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive
