"""HTTP clients for framework model clients that talk to the loopback gateway.

Every framework builds its own httpx client per model client, and each new client loads
the system CA bundle into a fresh SSL context (about 0.15 s). The gateway is plain HTTP on
127.0.0.1, so the harness hands frameworks clients built on one SSL context created once per
process. Async clients are created per run (they belong to one event loop).
"""

from __future__ import annotations

import functools
import ssl

import httpx

_TIMEOUT = httpx.Timeout(600.0, connect=10.0)


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    return ssl.create_default_context()


@functools.cache
def sync_client() -> httpx.Client:
    """One process-wide synchronous client (thread-safe, connection pooling)."""
    return httpx.Client(verify=shared_ssl_context(), timeout=_TIMEOUT)


def async_client() -> httpx.AsyncClient:
    """A new asynchronous client for one run's event loop, on the shared SSL context."""
    return httpx.AsyncClient(verify=shared_ssl_context(), timeout=_TIMEOUT)
