"""The step O7 and O8 share: the generic timeout, shown after the simulated delay.

Whether the write was lost before it committed (O7) or its answer after (O8), the agent is
shown the same generic timeout after the same delay, so that nothing it is shown tells the
two apart; only the world's state does.
"""

from __future__ import annotations

from pytest_sabot.lab.evidence import Streams
from pytest_sabot.lab.faults.call import FaultCall, Intercept
from pytest_sabot.lab.observation import TIMEOUT_MESSAGE, generic_timeout


def timed_out(call: FaultCall, note: str) -> Intercept:
    """The fault acted: the generic timeout of the call's tool, after its timeout."""
    return Intercept(
        observation=generic_timeout(call.tool),
        elapsed_ms=call.timeout_ms,
        activated=True,
        note=note,
    )


def shows_generic_timeout(streams: Streams, request_id: str) -> bool:
    """The agent was shown the generic timeout for this request."""
    shown = streams.observation_of(request_id)
    error = shown.observation.error if shown is not None else None
    return error is not None and error.code == "timeout" and error.message == TIMEOUT_MESSAGE


def timeout_not_shown(streams: Streams, request_id: str) -> str | None:
    """The last step of O7's and O8's landing probe: what is missing when the agent was not
    shown the generic timeout for this request (None: it was)."""
    if not shows_generic_timeout(streams, request_id):
        return "the agent was not shown the generic timeout"
    return None
