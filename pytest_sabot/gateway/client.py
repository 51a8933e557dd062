"""GatewayClient: the harness side of the control API, over httpx.

The gateway URL (``http://127.0.0.1:<port>/<secret>``) is one opaque string; the client
splits it into the origin, where control calls go with the secret in the
``X-Sabot-Secret`` header, and the secret path prefix of the agents' base URLs. Runs are
named by the caller's label; the unguessable run key the gateway answers with stays inside
this client, which therefore is the only one able to drain or close the runs it registered.

A harness in the gateway's own process hands the client the gateway's service as well
(``GatewayClient(gateway.url, service=gateway.service)``): its control calls then run the
same routes as a direct call (gateway/control.py), without the two HTTP ends a loopback
request costs on each side. The agents' model calls go over HTTP either way.
"""

from __future__ import annotations

import functools
import json
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

import httpx

from pytest_sabot.gateway.protocol import (
    Downgrade,
    ExchangeRecord,
    GatewayStats,
    RunGranted,
    RunRegistered,
    SessionRegistered,
    encode_body,
)
from pytest_sabot.gateway.secrets import REDACTED, redact_in_logs

if TYPE_CHECKING:
    from pytest_sabot.gateway.service import GatewayService

SECRET_HEADER = "X-Sabot-Secret"


class GatewayError(Exception):
    """The gateway refused a control request; ``code`` is its OpenAI-style error code."""

    def __init__(self, status: int, code: str | None, message: str) -> None:
        super().__init__(f"gateway HTTP {status} ({code}): {message}")
        self.status = status
        self.code = code
        self.message = message


ACCOUNT_QUERY = "account"


def _parts(url: str) -> tuple[str, str, str | None]:
    parts = urlsplit(url.strip())
    secret = parts.path.strip("/")
    if parts.scheme != "http" or not parts.hostname or parts.port is None:
        raise ValueError(
            "the gateway URL must look like http://127.0.0.1:<port>/<secret>, as printed by "
            "python -m pytest_sabot.gateway"
        )
    query = parse_qs(parts.query, keep_blank_values=True) if parts.query else {}
    account = query.pop(ACCOUNT_QUERY, [None])[-1]
    if not secret or "/" in secret or query or parts.fragment:
        raise ValueError(
            "the gateway URL has no session secret: it must end in the one path segment "
            "python -m pytest_sabot.gateway printed (http://127.0.0.1:<port>/<secret>)"
        )
    return f"http://{parts.netloc}", secret, account or None


def split_gateway_url(url: str) -> tuple[str, str]:
    """(origin, secret) of a gateway URL; ValueError (never quoting the URL) otherwise."""
    origin, secret, _account = _parts(url)
    return origin, secret


def with_account(url: str, account: str) -> str:
    """The gateway URL as one session uses it: every client made from it registers its
    runs under that session's account (its own spend cap, gateway/accounts.py)."""
    origin, secret, _ = _parts(url)
    return f"{origin}/{secret}?{urlencode({ACCOUNT_QUERY: account})}"


@functools.cache
def _http(origin: str) -> httpx.Client:
    """One keep-alive connection pool per gateway and process, shared by every client.

    Loopback only: no proxy from the environment and no TLS (the gateway is plain HTTP, so
    no CA bundle is loaded)."""
    return httpx.Client(
        base_url=origin,
        trust_env=False,
        verify=False,
        timeout=httpx.Timeout(30.0),
        limits=httpx.Limits(max_connections=32, max_keepalive_connections=8),
    )


class GatewayClient:
    """Talks to a gateway at ``url`` (e.g. from an xdist worker)."""

    def __init__(
        self, url: str, timeout_s: float = 30.0, service: GatewayService | None = None
    ) -> None:
        self._origin, self._secret, self.account = _parts(url)
        self._service = service  # the gateway's own service, in its process (see above)
        redact_in_logs(self._secret)
        self.url = f"{self._origin}/{self._secret}"
        self.timeout_s = timeout_s
        self._keys: dict[str, str] = {}  # label -> run key of the runs registered here
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never shows the secret
        return f"GatewayClient({self._origin})"

    def close(self) -> None:
        """Nothing to release: the connection pool is shared by the process."""

    def _key(self, label: str) -> str:
        with self._lock:
            return self._keys.get(label, label)

    def base_url(self, run_key: str, agent: str) -> str:
        """The OpenAI base URL one agent of one run uses (ends in /v1); ``run_key`` is the
        label the run was registered under."""
        key = quote(self._key(run_key), safe="")
        return f"{self.url}/run/{key}/agent/{quote(agent, safe='')}/v1"

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        if self._service is not None:
            return self._direct(self._service, method, path, payload)
        try:
            response = _http(self._origin).request(
                method,
                path,
                json=payload,
                headers={SECRET_HEADER: self._secret},
                timeout=self.timeout_s,
            )
        except httpx.HTTPError as exc:
            text = f"{type(exc).__name__}: {exc}".replace(self._secret, REDACTED)
            raise GatewayError(0, "sabot_gateway_unreachable", text) from None
        if response.status_code >= 400:
            try:
                err = response.json()["error"]
                code, message = err.get("code"), str(err.get("message"))
            except (ValueError, KeyError, TypeError):
                code, message = None, response.text[:300]
            raise GatewayError(
                response.status_code, code, message.replace(self._secret, REDACTED)
            )
        return response.json()

    def _direct(self, service: GatewayService, method: str, path: str, payload: Any) -> Any:
        """A control call run in this process: the route the HTTP handler would run, its
        answer as the JSON the handler would send, its refusal as the same GatewayError."""
        # The service's modules are in this process already: it started the gateway.
        from pytest_sabot.gateway.control import control
        from pytest_sabot.gateway.service import ControlError

        parts = [unquote(p) for p in path.strip("/").split("/")]
        body = encode_body(payload) if method == "POST" and payload is not None else b""
        try:
            status, answer = control(service, method, parts[1:], body)
        except ControlError as exc:
            status, answer = exc.status, exc.body
        except Exception as exc:  # what the handler answers 500
            text = service.scrubber.text(f"gateway error: {type(exc).__name__}: {exc}")
            raise GatewayError(500, "sabot_internal_error", text) from None
        if status >= 400:
            err = answer.get("error", {}) if isinstance(answer, dict) else {}
            message = str(err.get("message")).replace(self._secret, REDACTED)
            raise GatewayError(status, err.get("code"), message)
        return json.loads(encode_body(answer))

    def register_run(
        self,
        run_key: str,
        cell_id: str,
        seed: int,
        model: str,
        downgrade: Downgrade | dict[str, Any] | None = None,
        max_calls: int | None = None,
    ) -> dict[str, Any]:
        """Announce a run before its first model call (raises GatewayError if refused).
        ``run_key`` is the caller's label for the run; the gateway's key is kept here.
        ``max_calls`` caps the run's model calls (the runaway guard)."""
        plan = downgrade.model_dump() if isinstance(downgrade, Downgrade) else downgrade
        body: dict[str, Any] = {
            "label": run_key, "cell_id": cell_id, "seed": seed, "model": model, "downgrade": plan
        }
        if self.account is not None:
            body["account"] = self.account
        if max_calls is not None:
            body["max_calls"] = max_calls
        payload = self._call("POST", "/sabot/runs", body)
        answer = RunRegistered.model_validate(payload)
        with self._lock:
            self._keys[run_key] = answer.run_key
        return answer.model_dump(mode="json")

    def drain(self, run_key: str) -> list[ExchangeRecord]:
        """Exchanges of this run since the last drain, in the order they were answered."""
        key = quote(self._key(run_key), safe="")
        payload = self._call("POST", f"/sabot/runs/{key}/drain", {})
        return [ExchangeRecord.model_validate(r) for r in payload["exchanges"]]

    def close_run(self, run_key: str) -> list[ExchangeRecord]:
        """Forget the run (finishing its recording); returns exchanges not drained yet."""
        key = quote(self._key(run_key), safe="")
        try:
            payload = self._call("POST", f"/sabot/runs/{key}/close", {})
        finally:
            with self._lock:
                self._keys.pop(run_key, None)
        return [ExchangeRecord.model_validate(r) for r in payload["exchanges"]]

    def grant(self, run_key: str, agent: str) -> RunGranted:
        """A credential for one agent of one of this client's runs: it opens that run's
        model calls at the gateway's scoped door (``<origin>/v1``) and nothing else."""
        key = quote(self._key(run_key), safe="")
        answer = RunGranted.model_validate(
            self._call("POST", f"/sabot/runs/{key}/grant", {"agent": agent})
        )
        redact_in_logs(answer.api_key)
        return answer

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``: where the scoped door (``/v1``) is served."""
        return self._origin

    def register_session(
        self, session: str, budget_usd: float, spend_ledger: str | None
    ) -> SessionRegistered:
        """Open this session's own spend cap at the gateway (idempotent)."""
        payload = self._call(
            "POST",
            "/sabot/sessions",
            {"session": session, "budget_usd": budget_usd, "spend_ledger": spend_ledger},
        )
        return SessionRegistered.model_validate(payload)

    def account_stats(self) -> GatewayStats:
        """The calls and spend of this client's session account (GatewayError without one)."""
        if self.account is None:
            raise GatewayError(0, "sabot_no_account", "this client has no session account")
        return GatewayStats.model_validate(
            self._call("GET", f"/sabot/sessions/{quote(self.account, safe='')}")
        )

    def stats(self) -> GatewayStats:
        return GatewayStats.model_validate(self._call("GET", "/sabot/stats"))

    def health(self) -> bool:
        try:
            return bool(self._call("GET", "/sabot/health").get("ok"))
        except GatewayError:
            return False
