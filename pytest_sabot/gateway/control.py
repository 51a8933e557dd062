"""The control routes of the gateway (``/sabot/...``), as one dispatch over its service.

The HTTP handler answers them through :func:`control` once a request has passed the
refusals (browser headers, Host, the session secret); a harness in the gateway's own
process, which holds the service itself, calls :func:`control` directly and spares every
control call its two HTTP ends (``GatewayClient(url, service=...)``). Either way the same
routes run with the same bodies and the same errors.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pytest_sabot.gateway.protocol import error_body
from pytest_sabot.gateway.service import ControlError

if TYPE_CHECKING:
    from pytest_sabot.gateway.service import GatewayService


def _json(body: bytes, what: str) -> Any:
    try:
        return json.loads(body or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ControlError(
            400, f"{what} registration is not valid JSON: {exc}", "invalid_json"
        ) from exc


def control(service: GatewayService, method: str, parts: list[str], body: bytes) -> tuple[int, Any]:
    """(status, JSON payload) of one control request; ``parts`` are the unquoted path
    segments after ``/sabot``. ControlError for a request the service refuses."""
    if method == "GET" and parts == ["health"]:
        return 200, {"ok": True}
    if method == "GET" and parts == ["stats"]:
        return 200, service.stats().model_dump(mode="json")
    if method == "POST" and parts == ["runs"]:
        return 200, service.register_run(_json(body, "run"))
    if method == "POST" and parts == ["sessions"]:
        return 200, service.register_session(_json(body, "session"))
    if method == "GET" and len(parts) == 2 and parts[0] == "sessions":
        return 200, service.session_stats(parts[1]).model_dump(mode="json")
    if method == "POST" and len(parts) == 3 and parts[0] == "runs":
        run_key, action = parts[1], parts[2]
        if action == "grant":
            return 200, service.grant(run_key, _json(body, "grant"))
        if action == "drain":
            return 200, {"exchanges": service.drain(run_key)}
        if action == "close":
            return 200, {"exchanges": service.close_run(run_key)}
    return 404, error_body(f"no control route for {method} here", "invalid_request_error",
                           "unknown_route")
