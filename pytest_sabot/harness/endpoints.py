"""Model endpoints for pipelines outside the harness (a trusted agent's child process, an
MCP client): a scoped credential per agent of the run, never the session secret.

A framework adapter runs inside the harness and reaches the gateway through the session's
secret URL (``ctx.base_url(agent)``). A pipeline outside the harness is handed instead
``(<origin>/v1, credential)``: the credential opens that run's model calls as that agent
and nothing else (no registration, drain, close or stats route; no other run), and ends
when the run is closed. The URL names neither the secret, nor the run, nor the cell
(SPEC.md I117).
"""

from __future__ import annotations

import threading

from pytest_sabot.gateway.client import GatewayClient

_LOCK = threading.Lock()


def scoped_endpoint(
    gateway: GatewayClient, run_key: str, agent: str, cache: dict[str, tuple[str, str]]
) -> tuple[str, str]:
    """(base URL, credential) of one agent of an open run, granted once and kept in
    ``cache`` (the run context's) for the rest of the run."""
    with _LOCK:
        known = cache.get(agent)
    if known is not None:
        return known
    granted = gateway.grant(run_key, agent)
    endpoint = (f"{gateway.origin}{granted.base_path}", granted.api_key)
    with _LOCK:
        return cache.setdefault(agent, endpoint)
