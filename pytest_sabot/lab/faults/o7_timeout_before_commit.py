"""O7 timeout_before_commit: the request is lost before the world sees it.

Nothing is delivered, so there is no write and no operation record; after the simulated
timeout the agent is shown the generic timeout (the same one O8 shows).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pytest_sabot.lab.evidence import Streams
from pytest_sabot.lab.faults.base import FaultBehaviour, FaultEntryBase
from pytest_sabot.lab.faults.call import EntryState, FaultCall, Intercept
from pytest_sabot.lab.observation import TIMEOUT_MESSAGE, generic_timeout
from pytest_sabot.lab.vocabulary import WRITE_TOOLS


class TimeoutBeforeCommitFault(FaultEntryBase):
    """Schedule entry for O7."""

    fault: Literal["timeout_before_commit"] = Field(description="O7: lost before commit.")


def intercept(call: FaultCall, entry: TimeoutBeforeCommitFault, state: EntryState) -> Intercept:
    return Intercept(
        observation=generic_timeout(call.tool),
        elapsed_ms=call.timeout_ms,
        activated=True,
        note="request dropped before delivery; generic timeout shown",
    )


def shows_generic_timeout(streams: Streams, request_id: str) -> bool:
    shown = streams.observation_of(request_id)
    error = shown.observation.error if shown is not None else None
    return error is not None and error.code == "timeout" and error.message == TIMEOUT_MESSAGE


def landed(streams: Streams, rid: str) -> str | None:
    """What the streams lack for this fault to show in request ``rid`` (None: it does)."""
    if streams.deliveries_of(rid):
        return "a delivery reached the world"
    if streams.effects_of(rid):
        return "an effect was committed"
    if not shows_generic_timeout(streams, rid):
        return "the agent was not shown the generic timeout"
    return None


FAULT = FaultBehaviour(entry=TimeoutBeforeCommitFault, targets=WRITE_TOOLS,
                       intercept=intercept, landed=landed,
                       shown="no delivery, no effect, generic timeout shown")
