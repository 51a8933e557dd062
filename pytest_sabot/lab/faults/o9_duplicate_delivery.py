"""O9 duplicate_delivery: one agent call reaches the world twice.

Both deliveries carry the same arguments (and the same operation key, if any); the
server's ordinary idempotency contract decides whether the second one writes again. The
agent is shown the answer to the first delivery.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pytest_sabot.lab.evidence import Streams
from pytest_sabot.lab.faults.base import FaultBehaviour, FaultEntryBase
from pytest_sabot.lab.faults.call import EntryState, FaultCall, Intercept
from pytest_sabot.lab.vocabulary import ALL_TOOLS


class DuplicateDeliveryFault(FaultEntryBase):
    """Schedule entry for O9."""

    fault: Literal["duplicate_delivery"] = Field(description="O9: delivered twice.")


def intercept(call: FaultCall, entry: DuplicateDeliveryFault, state: EntryState) -> Intercept:
    first = call.deliver()
    second = call.deliver()
    outcome = "replayed from the idempotency store" if second.replayed_operation else (
        "committed again" if second.committed else "committed nothing")
    return Intercept(
        observation=first.response,
        elapsed_ms=call.latency_ms,
        activated=True,
        note=f"delivered as {first.delivery_id} and {second.delivery_id}; the second "
        f"{outcome}",
    )


def landed(streams: Streams, rid: str) -> str | None:
    """What the streams lack for this fault to show in request ``rid`` (None: it does)."""
    deliveries = streams.deliveries_of(rid)
    if [d.copy_number for d in deliveries] != [1, 2]:
        return f"expected deliveries 1 and 2, found {len(deliveries)}"
    if deliveries[0].arguments != deliveries[1].arguments:
        return "the two deliveries differ"
    shown = streams.observation_of(rid)
    if shown is None or shown.observation != deliveries[0].response:
        return "the agent was not shown the first delivery's answer"
    return None


FAULT = FaultBehaviour(entry=DuplicateDeliveryFault, targets=frozenset(ALL_TOOLS),
                       intercept=intercept, landed=landed, shown="two deliveries of one request")
