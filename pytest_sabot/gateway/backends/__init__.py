"""Model backends behind the gateway, one registry of them: the embedded model (``sim``), a
live OpenAI-compatible upstream (``openai``), a local server (``local``) and replay of
recorded exchanges (``replay``). A scheme's factory is imported when a run first names it,
so a keyless session never builds the upstream's HTTP client."""

from __future__ import annotations

from collections.abc import Callable

from pytest_sabot.core.registry import Registry
from pytest_sabot.gateway.backends.base import (
    Backend,
    BackendError,
    BackendHost,
    BackendReply,
    CallContext,
    is_live,
    records,
    replays,
)

BackendFactory = Callable[[BackendHost], Backend]

BACKENDS: Registry[BackendFactory] = Registry(
    "model backend",
    {
        "sim": "pytest_sabot.gateway.backends.sim:sim_backend",
        "openai": "pytest_sabot.gateway.backends.openai_upstream:openai_backend",
        "local": "pytest_sabot.gateway.backends.local:local_backend",
        "replay": "pytest_sabot.gateway.backends.replay:replay_backend",
    },
)
"""Scheme of a model spec -> the factory of the backend that serves it."""

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "BackendFactory",
    "BackendHost",
    "BackendReply",
    "CallContext",
    "is_live",
    "records",
    "replays",
]
