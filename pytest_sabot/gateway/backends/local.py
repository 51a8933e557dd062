"""A local OpenAI-compatible server (``local:<model>@<base url>``): Ollama, llama.cpp's
server, vLLM or any server speaking Chat Completions on the machine or the network.

No key is sent (no Authorization header) and nothing is paid: every call costs $0 and its
tokens are counted from the usage the server reports (a server that reports none leaves
them unknown). The server is always asked for a whole completion; the gateway streams it to
the client itself, so what is recorded is exactly what is served and replayed, as for a
live upstream. A connection failure or a timeout is answered 502 or 504 naming the server;
an error the server answers is passed through with its status.

Each call holds one slot of the gateway's connection limit while it is at the server, as a
live call does, so ``--sabot-max-connections`` caps what the server is sent at once (and,
with a shared budget, what the whole session sends it).
"""

from __future__ import annotations

import threading
from contextlib import nullcontext
from typing import Any

import httpx

from pytest_sabot.core.model_spec import ModelSpec, check_local
from pytest_sabot.gateway.backends.base import (
    BackendError,
    BackendHost,
    BackendReply,
    CallContext,
    answered_error,
    is_completion,
    json_or_none,
    usage_of,
    whole_completion_request,
)
from pytest_sabot.gateway.limiter import AdaptiveLimit, SlotTimeout


def local_backend(host: BackendHost) -> LocalServer:
    """The registry's factory of ``local:<model>@<url>``."""
    return LocalServer(timeout_s=float(host.settings.upstream_timeout_s), limit=host.limit)


class LocalServer:
    """Sends chat completions to the server the spec names; recorded, never paid."""

    records = True  # the gateway records its exchanges as it records a live upstream's

    def __init__(self, timeout_s: float = 120.0, limit: AdaptiveLimit | None = None) -> None:
        self.timeout_s = timeout_s
        self._limit = limit  # None: nothing caps the calls in flight (a backend made alone)
        self._client = httpx.Client(timeout=httpx.Timeout(timeout_s, connect=10.0))
        self._lock = threading.Lock()
        self.requests_sent = 0

    def close(self) -> None:
        self._client.close()

    def check(self, name: str) -> None:
        """ValueError unless ``name`` is '<model>@<http(s) base url>'."""
        check_local(ModelSpec("local", name))

    def complete(self, request: dict[str, Any], call: CallContext) -> BackendReply:
        spec = ModelSpec("local", call.name)
        body = whole_completion_request(request, spec.local_model)
        url = spec.local_url.rstrip("/") + "/chat/completions"
        held = self._limit.slot(timeout=self.timeout_s) if self._limit else nullcontext()
        try:
            with held:
                response = self._send(url, body, spec)
        except SlotTimeout:
            raise BackendError(504, f"no connection to the local model server {spec.local_url} "
                               f"came free within {self.timeout_s:g}s "
                               "(--sabot-max-connections)", "sabot_local_timeout",
                               "upstream_error") from None
        return self._reply(response, spec)

    def _send(self, url: str, body: dict[str, Any], spec: ModelSpec) -> httpx.Response:
        with self._lock:
            self.requests_sent += 1
        try:
            return self._client.post(url, json=body, headers={"Content-Type": "application/json"})
        except httpx.TimeoutException as exc:
            raise BackendError(504, f"local model server {spec.local_url} timed out "
                               f"({type(exc).__name__})", "sabot_local_timeout",
                               "upstream_error") from None
        except httpx.RequestError as exc:
            raise BackendError(502, f"local model server {spec.local_url} is unreachable "
                               f"({type(exc).__name__}: {exc})", "sabot_local_unreachable",
                               "upstream_error") from None

    def _reply(self, response: httpx.Response, spec: ModelSpec) -> BackendReply:
        payload = json_or_none(response.content)
        if response.status_code == 200 and is_completion(payload):
            return BackendReply(response=payload, usage=usage_of(payload), cost_usd=0.0)
        if response.status_code == 200:
            raise BackendError(502, f"local model server {spec.local_url} answered 200 with a "
                               "body that is not a ChatCompletion", "sabot_local_bad_body",
                               "upstream_error")
        raise answered_error("local model server", response.status_code, payload, response.text)
