"""O8 timeout_after_commit: the write commits, then the response is lost.

The request is delivered once and its write and operation record survive; the agent is
shown the same generic timeout as O7, after the same simulated delay. A delivery that
commits nothing (an error, or an idempotent replay) is passed through and the match is
recorded as suppressed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pytest_sabot.lab.evidence import Streams
from pytest_sabot.lab.faults.base import FaultBehaviour, FaultEntryBase
from pytest_sabot.lab.faults.call import EntryState, FaultCall, Intercept
from pytest_sabot.lab.faults.timeout import timed_out, timeout_not_shown
from pytest_sabot.lab.vocabulary import WRITE_TOOLS


class TimeoutAfterCommitFault(FaultEntryBase):
    """Schedule entry for O8."""

    fault: Literal["timeout_after_commit"] = Field(description="O8: lost after commit.")


def intercept(call: FaultCall, entry: TimeoutAfterCommitFault, state: EntryState) -> Intercept:
    delivered = call.deliver()
    if not delivered.committed:
        why = ("the server answered from its idempotency store"
               if delivered.replayed_operation else "the delivery committed nothing")
        return Intercept(delivered.response, call.latency_ms, activated=False, note=why)
    return timed_out(
        call, f"{delivered.delivery_id} committed; response lost, generic timeout shown"
    )


def landed(streams: Streams, rid: str) -> str | None:
    """What the streams lack for this fault to show in request ``rid`` (None: it does)."""
    deliveries = streams.deliveries_of(rid)
    if len(deliveries) != 1:
        return f"expected one delivery, found {len(deliveries)}"
    effects = streams.effects_of(rid)
    if not effects:
        return "no committed effect"
    request = streams.request(rid)
    key = request.arguments.get("operation_key") if request is not None else None
    if key is not None and any(e.operation_key != key for e in effects):
        return "the operation record does not carry the request's key"
    return timeout_not_shown(streams, rid)


FAULT = FaultBehaviour(entry=TimeoutAfterCommitFault, targets=WRITE_TOOLS,
                       intercept=intercept, landed=landed,
                       shown="one delivery committed; generic timeout shown")
