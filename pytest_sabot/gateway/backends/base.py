"""The one extension point of the gateway: something that answers a chat completion."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard

from pytest_sabot.gateway.protocol import Usage, error_body


@dataclass(frozen=True)
class CallContext:
    """Who is calling and which model spec must answer."""

    run_key: str
    cell_id: str
    seed: int
    agent: str
    call_index: int
    model: str  # the full spec that serves this call, e.g. 'sim:realistic-weak'
    name: str  # the part after the scheme, e.g. 'realistic-weak' or 'gpt-5.6-luna'
    # The session account the run is charged to beside the gateway's own cap (a paid
    # backend reserves through it: gateway.accounts.SessionAccount), None for the cap alone.
    account: Any = None


@dataclass(frozen=True)
class BackendReply:
    """A whole (non-streaming) ChatCompletion and what it cost."""

    response: dict[str, Any]
    usage: Usage
    cost_usd: float | None
    fixture: bool = False
    model_served: str | None = None  # overrides the routed spec (replay knows better)
    downgraded: bool | None = None  # overrides the routing decision (replay knows better)


class BackendError(Exception):
    """A failure to serve, carried to the client as an OpenAI-shaped error body."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str,
        type_: str = "sabot_error",
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.body = body if body is not None else error_body(message, type_, code)

    @property
    def message(self) -> str:
        err = self.body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])
        return str(self)


class Backend(Protocol):
    """Answers one chat-completion request (the request body as the client sent it).

    Optional, read with :func:`is_live` / :func:`replays` and ``check``: ``live = True`` for
    a paid upstream (an explicit opt-in, priced, budget-capped and recorded); ``replays =
    True`` for one that serves recorded exchanges (it is handed the scrubbed request it
    recorded and knows itself which calls were downgraded); ``check(name)`` refuses a model
    name at registration (ValueError, or a BackendError with its own status and code).
    """

    def complete(self, request: dict[str, Any], call: CallContext) -> BackendReply: ...


class BackendHost(Protocol):
    """What a backend factory is handed: the gateway's settings and shared state."""

    @property
    def settings(self) -> Any: ...

    @property
    def prices(self) -> Any: ...

    @property
    def budget(self) -> Any: ...

    @property
    def limit(self) -> Any: ...

    @property
    def scrubber(self) -> Any: ...


def is_live(backend: object) -> bool:
    """A paid upstream: opt-in, priced, budget-capped, recorded."""
    return bool(getattr(backend, "live", False))


def records(backend: object) -> bool:
    """A backend whose exchanges are recorded for replay: a live upstream, or one that says
    so itself (``records = True``: a local server)."""
    return is_live(backend) or bool(getattr(backend, "records", False))


def replays(backend: object) -> bool:
    """A backend that serves recorded exchanges."""
    return bool(getattr(backend, "replays", False))


def whole_completion_request(request: dict[str, Any], model: str) -> dict[str, Any]:
    """The body a backend sends a server of its own: the request for ``model``, asking for a
    whole completion (the gateway streams the answer to its caller itself)."""
    body = {k: v for k, v in request.items() if k not in ("stream", "stream_options")}
    body["model"] = model
    return body


def json_or_none(content: bytes) -> Any:
    """A server's answer body as JSON, None when it is not JSON."""
    try:
        return json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def is_completion(payload: Any) -> TypeGuard[dict[str, Any]]:
    """A ChatCompletion as a server sends it: a JSON object with a ``choices`` list."""
    return isinstance(payload, dict) and isinstance(payload.get("choices"), list)


def answered_error(server: str, status: int, payload: Any, text: str) -> BackendError:
    """The error a server answered (``payload``: its body as JSON, None if it is not),
    passed through with its status: its own body when that is an OpenAI-shaped error, else
    one quoting the start of ``text``, what it sent."""
    body = payload if isinstance(payload, dict) and "error" in payload else error_body(
        f"{server} answered HTTP {status}: {text[:300]}", "upstream_error", f"upstream_{status}"
    )
    return BackendError(status, f"{server} HTTP {status}", f"upstream_{status}", body=body)


def usage_of(response: dict[str, Any]) -> Usage:
    """Read OpenAI usage (with its detail objects) from a ChatCompletion dict."""
    raw = response.get("usage")
    if not isinstance(raw, dict):
        return Usage()

    def _int(value: Any) -> int | None:
        # a count that is not a whole number >= 0 is no count: the usage is unknown, and
        # the call keeps its worst case charged (never a credit against the cap)
        whole = isinstance(value, int) and not isinstance(value, bool)
        return value if whole and value >= 0 else None

    prompt_details = raw.get("prompt_tokens_details")
    completion_details = raw.get("completion_tokens_details")
    return Usage(
        prompt_tokens=_int(raw.get("prompt_tokens")),
        completion_tokens=_int(raw.get("completion_tokens")),
        cached_tokens=_int(prompt_details.get("cached_tokens"))
        if isinstance(prompt_details, dict)
        else None,
        reasoning_tokens=_int(completion_details.get("reasoning_tokens"))
        if isinstance(completion_details, dict)
        else None,
    )
