"""HTTP clients for framework model clients that talk to the loopback gateway.

Every framework builds its own httpx client per model client, and each new client loads
the system CA bundle into a fresh SSL context (about 0.15 s). The gateway is plain HTTP on
127.0.0.1, so the harness hands frameworks clients built on one SSL context created once per
process. Async clients are created per run (they belong to one event loop).
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

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


_installed = False


def share_default_ssl_context() -> None:
    """Make every httpx transport created from now on in this process reuse one default SSL
    context instead of loading the CA bundle again (about 0.1-0.2 s per client).

    Frameworks build their own HTTP clients (two per model client for CrewAI and LangChain)
    and offer no way to pass one in everywhere. Only the default case is shared: verify=True,
    no client certificate, no SSL_CERT_FILE/SSL_CERT_DIR override; every other call goes to
    httpx unchanged. The gateway is plain HTTP on loopback, so the context is never used to
    verify anything in a keyless run; for a live upstream it is the same default context
    httpx would have built. Idempotent.
    """
    global _installed
    if _installed:
        return
    import os

    from httpx import _config
    from httpx._transports import default as transports

    original = _config.create_ssl_context

    def create_ssl_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        overridden = trust_env and (
            os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR")
        )
        if verify is True and cert is None and not overridden:
            return _default_context(original)
        return original(verify=verify, cert=cert, trust_env=trust_env)

    setattr(transports, "create_ssl_context", create_ssl_context)  # noqa: B010
    _installed = True


@functools.cache
def _default_context(factory: Any) -> ssl.SSLContext:
    context: ssl.SSLContext = factory(verify=True, cert=None, trust_env=False)
    return context
