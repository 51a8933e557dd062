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
    """One process-wide synchronous client (thread-safe, connection pooling). It never goes
    through a proxy from the environment: its URLs carry the gateway's session secret."""
    return httpx.Client(verify=shared_ssl_context(), timeout=_TIMEOUT, trust_env=False)


def async_client() -> httpx.AsyncClient:
    """A new asynchronous client for one run's event loop, on the shared SSL context (no
    proxy from the environment, as for ``sync_client``)."""
    return httpx.AsyncClient(verify=shared_ssl_context(), timeout=_TIMEOUT, trust_env=False)


_installed = False


def share_default_ssl_context() -> None:
    """Make every httpx transport created from now on in this process reuse one SSL context
    per CA configuration instead of loading the CA bundle again (0.1-0.2 s per client).

    Frameworks build their own HTTP clients (two per model client for CrewAI and LangChain)
    and offer no way to pass one in everywhere. Only verify=True without a client
    certificate is shared, keyed by the CA settings httpx reads (SSL_CERT_FILE and
    SSL_CERT_DIR when trust_env), so each client gets exactly the context httpx would have
    built; every other call goes to httpx unchanged. Idempotent.
    """
    global _installed
    if _installed:
        return
    import os

    from httpx import _config
    from httpx._transports import default as transports

    original = _config.create_ssl_context

    def create_ssl_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        if verify is True and cert is None:
            where = (
                (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
                if trust_env
                else (None, None)
            )
            return _shared_context(original, trust_env, where)
        return original(verify=verify, cert=cert, trust_env=trust_env)

    setattr(transports, "create_ssl_context", create_ssl_context)  # noqa: B010
    _installed = True


@functools.cache
def _shared_context(factory: Any, trust_env: bool, where: tuple[str | None, str | None]) -> Any:
    del where  # part of the cache key: the CA settings the factory reads from the environment
    return factory(verify=True, cert=None, trust_env=trust_env)
