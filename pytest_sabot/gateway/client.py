"""GatewayClient: the harness side of the control API (stdlib HTTP only)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

from pytest_sabot.gateway.protocol import Downgrade, ExchangeRecord, GatewayStats


class GatewayError(Exception):
    """The gateway refused a control request; ``code`` is its OpenAI-style error code."""

    def __init__(self, status: int, code: str | None, message: str) -> None:
        super().__init__(f"gateway HTTP {status} ({code}): {message}")
        self.status = status
        self.code = code
        self.message = message


class GatewayClient:
    """Talks to a gateway at ``url`` (e.g. from an xdist worker)."""

    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        # The gateway is on loopback: never route control calls through a proxy.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def base_url(self, run_key: str, agent: str) -> str:
        """The OpenAI base URL one agent of one run uses (ends in /v1)."""
        return f"{self.url}/run/{quote(run_key, safe='')}/agent/{quote(agent, safe='')}/v1"

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with self._opener.open(request, timeout=self.timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                err = json.loads(raw)["error"]
                code, message = err.get("code"), str(err.get("message"))
            except (ValueError, KeyError, TypeError):
                code, message = None, raw.decode("utf-8", "replace")[:300]
            raise GatewayError(exc.code, code, message) from None

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
