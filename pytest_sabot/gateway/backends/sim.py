"""The embedded deterministic model (``sim`` / ``sim:<persona>``): keyless, cost 0.

Its answers are acceptance fixtures, never measurements of a real model; every exchange
it serves is labelled ``fixture``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_sabot.core.model_spec import DEFAULT_PERSONA
from pytest_sabot.gateway.backends.base import (
    BackendError,
    BackendHost,
    BackendReply,
    CallContext,
    usage_of,
)

WEAK_SUFFIX = "-weak"

Respond = Callable[..., dict[str, Any]]


def weak_tier(persona: str) -> str:
    """The O4 downgrade of a persona: 'X' -> 'X-weak' (a weak persona stays weak)."""
    return persona if persona.endswith(WEAK_SUFFIX) else persona + WEAK_SUFFIX


def _load_respond() -> Respond:
    """The embedded model's ``respond``, imported on first use (the sim package is loaded
    only by a gateway that serves it). A broken import in it is a bug of the package: it
    fails as it is, never as a model that happens to be missing."""
    from pytest_sabot.sim.engine import respond

    return respond


def sim_backend(host: BackendHost) -> SimBackend:
    """The registry's factory of the embedded model."""
    del host  # the embedded model needs nothing of the gateway
    return SimBackend()


class SimBackend:
    """Calls ``pytest_sabot.sim.engine.respond`` (imported on first use)."""

    def __init__(self, respond: Respond | None = None) -> None:
        self._respond = respond

    def check(self, name: str) -> None:
        """ValueError when the persona is unknown to the embedded model."""
        if self._respond is not None:
            return  # an injected model decides for itself
        from pytest_sabot.sim.personas import parse_persona

        parse_persona(name)

    def complete(self, request: dict[str, Any], call: CallContext) -> BackendReply:
        if self._respond is None:
            self._respond = _load_respond()
        persona = call.name or DEFAULT_PERSONA
        try:
            response = self._respond(
                request,
                persona=persona,
                seed=call.seed,
                run_key=call.run_key,
                agent=call.agent,
                call_index=call.call_index,
            )
        except BackendError:
            raise
        except Exception as exc:
            raise BackendError(
                500,
                f"the embedded model failed on {call.agent} call {call.call_index}: "
                f"{type(exc).__name__}: {exc}",
                "sabot_sim_error",
            ) from exc
        if not isinstance(response, dict) or not isinstance(response.get("choices"), list):
            raise BackendError(
                500, "the embedded model returned no ChatCompletion dict", "sabot_sim_error"
            )
        return BackendReply(response=response, usage=usage_of(response), cost_usd=0.0, fixture=True)
