"""O10 rate_limit: a typed denial before anything is written.

The request never reaches the world; the agent is shown ``rate_limited`` with the
virtual delay to wait. Like a real limiter, a request to the same tool inside that
window is denied again (with the remaining delay), so an agent that ignores the delay
keeps being refused. ``times`` repeats the denial on consecutive requests.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pytest_sabot.lab.evidence import Streams
from pytest_sabot.lab.faults.base import FaultBehaviour, FaultEntryBase
from pytest_sabot.lab.faults.call import EntryState, FaultCall, Intercept
from pytest_sabot.lab.observation import failure
from pytest_sabot.lab.vocabulary import ALL_TOOLS


class RateLimitFault(FaultEntryBase):
    """Schedule entry for O10."""

    fault: Literal["rate_limit"] = Field(description="O10: typed pre-write denial.")
    retry_after_ms: int = Field(
        1000, ge=1, description="Virtual milliseconds the agent is told to wait."
    )


def intercept(call: FaultCall, entry: RateLimitFault, state: EntryState) -> Intercept:
    blocked = state.blocked_until_ms
    if blocked is not None and call.now_ms < blocked:
        wait = blocked - call.now_ms
        note = f"inside the retry window; {wait} ms remain"
    else:
        wait = entry.retry_after_ms
        state.blocked_until_ms = call.now_ms + wait
        note = f"denied before delivery; retry after {wait} ms"
    shown = failure(call.tool, "rate_limited", f"rate limit reached; retry after {wait} ms",
                    retry_after_ms=wait)
    return Intercept(shown, call.latency_ms, activated=True, note=note,
                     detail={"retry_after_ms": wait})


def holds(state: EntryState, now_ms: int) -> bool:
    return state.blocked_until_ms is not None and now_ms < state.blocked_until_ms


def landed(streams: Streams, rid: str) -> str | None:
    """What the streams lack for this fault to show in request ``rid`` (None: it does)."""
    if streams.deliveries_of(rid) or streams.effects_of(rid):
        return "the request reached the world"
    shown = streams.observation_of(rid)
    error = shown.observation.error if shown is not None else None
    if error is None or error.code != "rate_limited" or not error.retry_after_ms:
        return "the agent was not shown a typed rate_limited denial with a delay"
    return None


FAULT = FaultBehaviour(entry=RateLimitFault, targets=frozenset(ALL_TOOLS),
                       intercept=intercept, landed=landed, holds=holds,
                       shown="denied before delivery with a retry delay")
