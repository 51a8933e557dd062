"""O11 stale_read: a read is served from a real, earlier committed snapshot.

The fault picks the newest earlier snapshot (at most ``max_lag`` back) whose answer to
this read differs from the current state's answer, and serves it; the authoritative
state is not touched. When no earlier snapshot answers differently the read is served
normally and the match is recorded as suppressed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pytest_sabot.lab.evidence import Streams
from pytest_sabot.lab.faults.base import FaultBehaviour, FaultEntryBase
from pytest_sabot.lab.faults.call import EntryState, FaultCall, Intercept
from pytest_sabot.lab.vocabulary import READ_TOOLS


class StaleReadFault(FaultEntryBase):
    """Schedule entry for O11."""

    fault: Literal["stale_read"] = Field(description="O11: an earlier snapshot is served.")
    max_lag: int | None = Field(
        None, ge=1,
        description="How many committed snapshots back it may reach; null: any earlier one.",
    )


def intercept(call: FaultCall, entry: StaleReadFault, state: EntryState) -> Intercept:
    current = call.read_at(None)
    candidates = list(call.earlier_snapshots())
    if entry.max_lag is not None:
        candidates = candidates[: entry.max_lag]
    for index in candidates:
        if call.read_at(index) != current:
            delivered = call.deliver(snapshot=index)
            return Intercept(
                delivered.response, call.latency_ms, activated=True,
                note=f"served committed snapshot {index} as {delivered.delivery_id}",
                detail={"snapshot": index},
            )
    delivered = call.deliver()
    return Intercept(delivered.response, call.latency_ms, activated=False,
                     note="no earlier committed snapshot answers this read differently")


def landed(streams: Streams, rid: str) -> str | None:
    """What the streams lack for this fault to show in request ``rid`` (None: it does)."""
    deliveries = streams.deliveries_of(rid)
    if len(deliveries) != 1 or deliveries[0].view != "snapshot":
        return "the read was not served from a snapshot"
    delivery = deliveries[0]
    if delivery.response == delivery.authoritative_response:
        return "the snapshot answered like the current state"
    if streams.effects_of(rid):
        return "the authoritative state changed"
    shown = streams.observation_of(rid)
    if shown is None or shown.observation != delivery.response:
        return "the agent was not shown the snapshot's answer"
    return None


FAULT = FaultBehaviour(entry=StaleReadFault, targets=READ_TOOLS,
                       intercept=intercept, landed=landed,
                       shown="an earlier snapshot's answer was shown")
