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
from pytest_sabot.lab.faults.timeout import shows_generic_timeout, timed_out, timeout_not_shown
from pytest_sabot.lab.vocabulary import WRITE_TOOLS

__all__ = ["FAULT", "TimeoutBeforeCommitFault", "intercept", "landed", "shows_generic_timeout"]


class TimeoutBeforeCommitFault(FaultEntryBase):
    """Schedule entry for O7."""

    fault: Literal["timeout_before_commit"] = Field(description="O7: lost before commit.")


def intercept(call: FaultCall, entry: TimeoutBeforeCommitFault, state: EntryState) -> Intercept:
    return timed_out(call, "request dropped before delivery; generic timeout shown")


def landed(streams: Streams, rid: str) -> str | None:
    """What the streams lack for this fault to show in request ``rid`` (None: it does)."""
    if streams.deliveries_of(rid):
        return "a delivery reached the world"
    if streams.effects_of(rid):
        return "an effect was committed"
    return timeout_not_shown(streams, rid)


FAULT = FaultBehaviour(entry=TimeoutBeforeCommitFault, targets=WRITE_TOOLS,
                       intercept=intercept, landed=landed,
                       shown="no delivery, no effect, generic timeout shown")
