"""The embedded deterministic model (``sim`` / ``sim:<persona>``): keyless, cost 0.

Its answers are acceptance fixtures, never measurements of a real model; every exchange
it serves is labelled ``fixture``.

It can also answer in a provider's time (``--sabot-sim-latency 800ms``, the gateway's
``sim_latency_s``): each call then takes a seeded lognormal time around that median, the
same for the same call of the same run in every session (:func:`sim_latency`), while it
holds one of the gateway's upstream connections (``--sabot-max-connections``) as a live
call does. Only the time changes: the answer is the same byte for byte, so every verdict
is too. That makes a live wave's throughput measurable keyless (bench/live_shaped.py).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import Any

from pytest_sabot.core.errors import REFUSED_CODE, ModelRefused
from pytest_sabot.core.model_spec import DEFAULT_PERSONA
from pytest_sabot.gateway.backends.base import (
    BackendError,
    BackendHost,
    BackendReply,
    CallContext,
    usage_of,
)

WEAK_SUFFIX = "-weak"
# The spread of the latency: the standard deviation of its logarithm. 0.5 puts the middle
# 90% of calls between 0.44x and 2.3x the median, the shape of a hosted model's times;
# a draw is clipped at three deviations (0.22x to 4.5x), as a provider's timeout would.
LATENCY_SIGMA = 0.5
_CLIP = 3.0

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


def sim_latency(median_s: float, call: CallContext) -> float:
    """How long the embedded model takes to answer this call, in seconds: a lognormal draw
    around ``median_s`` seeded by the run's label, the agent, the call's index and the
    cell's seed (so the same call takes the same time in every session); 0 when the
    median is 0."""
    if median_s <= 0:
        return 0.0
    key = f"sim-latency|{call.run_key}|{call.agent}|{call.call_index}|{call.seed}"
    z = random.Random(key).gauss(0.0, 1.0)
    z = max(-_CLIP, min(_CLIP, z))
    return median_s * math.exp(LATENCY_SIGMA * z)


def sim_backend(host: BackendHost) -> SimBackend:
    """The registry's factory of the embedded model: answering at once, or in a provider's
    time through the gateway's connection limit when the settings give a latency."""
    latency = float(getattr(host.settings, "sim_latency_s", 0.0) or 0.0)
    return SimBackend(latency_s=latency, limit=host.limit if latency > 0 else None)


class SimBackend:
    """Calls ``pytest_sabot.sim.engine.respond`` (imported on first use).

    ``latency_s``: the median time of a call (0: answer at once); a call then holds a slot
    of ``limit`` (the gateway's AdaptiveLimit) for its whole time, as a live call holds an
    upstream connection."""

    def __init__(
        self, respond: Respond | None = None, latency_s: float = 0.0, limit: Any = None
    ) -> None:
        self._respond = respond
        self.latency_s = latency_s
        self._limit = limit

    def check(self, name: str) -> None:
        """ValueError when the persona is unknown to the embedded model."""
        if self._respond is not None:
            return  # an injected model decides for itself
        from pytest_sabot.sim.personas import parse_persona

        parse_persona(name)

    def complete(self, request: dict[str, Any], call: CallContext) -> BackendReply:
        if self.latency_s <= 0:
            return self._answer(request, call)
        wait = sim_latency(self.latency_s, call)
        if self._limit is None:
            return self._answer_in(wait, request, call)
        with self._limit.slot():
            return self._answer_in(wait, request, call)

    def _answer_in(self, wait: float, request: dict[str, Any], call: CallContext) -> BackendReply:
        """The answer, given once ``wait`` seconds have passed since the call began."""
        started = time.monotonic()
        reply = self._answer(request, call)
        time.sleep(max(0.0, wait - (time.monotonic() - started)))
        return reply

    def _answer(self, request: dict[str, Any], call: CallContext) -> BackendReply:
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
        except ModelRefused as exc:  # a request it does not recognise (SPEC I151)
            raise BackendError(422, str(exc), REFUSED_CODE) from exc
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
