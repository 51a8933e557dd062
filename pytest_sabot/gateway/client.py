"""GatewayClient: the harness side of the control API (stdlib HTTP only)."""

from __future__ import annotations

import http.client
import json
import select
import threading
import weakref
from typing import Any
from urllib.parse import quote, urlsplit

from pytest_sabot.gateway.protocol import Downgrade, ExchangeRecord, GatewayStats


class GatewayError(Exception):
    """The gateway refused a control request; ``code`` is its OpenAI-style error code."""

    def __init__(self, status: int, code: str | None, message: str) -> None:
        super().__init__(f"gateway HTTP {status} ({code}): {message}")
        self.status = status
        self.code = code
        self.message = message


# Errors that mean a kept-alive connection was closed by the gateway while idle; the
# request never reached a handler, so it is sent again once on a fresh connection.
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


def _is_stale(conn: http.client.HTTPConnection) -> bool:
    """True when an idle kept-alive socket is readable, i.e. the gateway closed it."""
    sock = conn.sock
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _close_all(conns: list[http.client.HTTPConnection]) -> None:
    for conn in conns:
        conn.close()


class GatewayClient:
    """Talks to a gateway at ``url`` (e.g. from an xdist worker).

    Control calls reuse kept-alive HTTP/1.1 connections to the gateway (loopback, never
    through a proxy); a connection the gateway has closed is replaced by a fresh one.
    """

    _POOL_SIZE = 8

    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        parts = urlsplit(self.url)
        self._host = parts.hostname or ""
        self._port = parts.port or 80
        self._prefix = parts.path
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        weakref.finalize(self, _close_all, self._idle)

    def _checkout(self) -> tuple[http.client.HTTPConnection, bool]:
        """An idle connection (and True), or a new one (and False)."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                break
            if not _is_stale(conn):
                return conn, True
            conn.close()
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout_s), False

    def _checkin(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._POOL_SIZE:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Close the idle connections (the client stays usable)."""
        with self._lock:
            idle, self._idle[:] = list(self._idle), []
        _close_all(idle)

    def _exchange(self, method: str, path: str, data: bytes | None) -> tuple[int, bytes]:
        if not self._host:
            raise ValueError(f"gateway url {self.url!r} has no host")
        headers = {"Content-Type": "application/json"}
        if data is not None:
            headers["Content-Length"] = str(len(data))
        while True:
            conn, reused = self._checkout()
            try:
                conn.request(method, self._prefix + path, body=data, headers=headers)
                response = conn.getresponse()
                raw = response.read()
            except _STALE:
                conn.close()
                if reused:
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            if response.will_close:
                conn.close()
            else:
                self._checkin(conn)
            return response.status, raw

    def base_url(self, run_key: str, agent: str) -> str:
        """The OpenAI base URL one agent of one run uses (ends in /v1)."""
        return f"{self.url}/run/{quote(run_key, safe='')}/agent/{quote(agent, safe='')}/v1"

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        status, raw = self._exchange(method, path, data)
        if status >= 400:
            try:
                err = json.loads(raw)["error"]
                code, message = err.get("code"), str(err.get("message"))
            except (ValueError, KeyError, TypeError):
                code, message = None, raw.decode("utf-8", "replace")[:300]
            raise GatewayError(status, code, message)
        return json.loads(raw)

    def register_run(
        self,
        run_key: str,
        cell_id: str,
        seed: int,
        model: str,
        downgrade: Downgrade | dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Announce a run before its first model call (raises GatewayError if refused)."""
        plan = downgrade.model_dump() if isinstance(downgrade, Downgrade) else downgrade
        result: dict[str, Any] = self._call(
            "POST",
            "/sabot/runs",
            {
                "run_key": run_key,
                "cell_id": cell_id,
                "seed": seed,
                "model": model,
                "downgrade": plan,
            },
        )
        return result

    def drain(self, run_key: str) -> list[ExchangeRecord]:
        """Exchanges of this run since the last drain, in the order they were answered."""
        payload = self._call("POST", f"/sabot/runs/{quote(run_key, safe='')}/drain", {})
        return [ExchangeRecord.model_validate(r) for r in payload["exchanges"]]

    def close_run(self, run_key: str) -> list[ExchangeRecord]:
        """Forget the run (finishing its recording); returns exchanges not drained yet."""
        payload = self._call("POST", f"/sabot/runs/{quote(run_key, safe='')}/close", {})
        return [ExchangeRecord.model_validate(r) for r in payload["exchanges"]]

    def stats(self) -> GatewayStats:
        return GatewayStats.model_validate(self._call("GET", "/sabot/stats"))

    def health(self) -> bool:
        try:
            return bool(self._call("GET", "/sabot/health").get("ok"))
        except (OSError, GatewayError):
            return False
