"""HTTP clients for whatever talks to the loopback gateway: the frameworks' model clients
(handed out by the run context, ``ctx.http_client()`` / ``ctx.http_async_client()``) and
the OpenAI judge.

Left to itself, every framework builds its own httpx client per model client, and each new
client loads the system CA bundle into a fresh SSL context (0.1-0.2 s each, two per model
client for CrewAI and LangChain). The gateway is plain HTTP on 127.0.0.1 and needs no TLS
at all; the clients here are built on one SSL context created once per process, so a new
client costs next to nothing. None of them goes through a proxy from the environment:
their URLs carry the gateway's session secret.
"""

from __future__ import annotations

import functools
import ssl

import httpx

_TIMEOUT = httpx.Timeout(600.0, connect=10.0)


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """The process's one SSL context (unused on the plain-HTTP gateway, but httpx builds a
    transport's context when the client is made)."""
    return ssl.create_default_context()


@functools.cache
def sync_client() -> httpx.Client:
    """One process-wide synchronous client (thread-safe, connection pooling)."""
    return httpx.Client(verify=shared_ssl_context(), timeout=_TIMEOUT, trust_env=False)


def async_client() -> httpx.AsyncClient:
    """A new asynchronous client for one event loop (an async client belongs to the loop
    it is used in); whoever asks for it closes it when its loop is done."""
    return httpx.AsyncClient(verify=shared_ssl_context(), timeout=_TIMEOUT, trust_env=False)
