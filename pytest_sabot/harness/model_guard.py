"""What the model-call guards make of an attempt: the embedded model's refusals (SPEC I151)
and the runaway guard's cap (SPEC I152), read from the attempt's model-call events.

A refused call ends the attempt as a run error whatever the pipeline did with the model
error it saw (raised it, retried it, or swallowed it and carried on): a row is never scored
on answers the embedded model refused to give. The runaway guard's refusal wins over the
refusals it caused, so the reason names the loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_sabot.core.errors import REFUSED_MARK
from pytest_sabot.core.limits import DEFAULT_MAX_MODEL_CALLS

__all__ = ["DEFAULT_MAX_MODEL_CALLS", "RUNAWAY_MARK", "guard_error", "refused_calls"]

RUNAWAY_MARK = "runaway:"
"""The gateway's error text for a call past the cap starts with this."""


def _errors(events: Iterable[Any]) -> list[str]:
    return [
        str(e.data.error) for e in events if e.kind == "model_call" and e.data.error
    ]


def refused_calls(events: Iterable[Any]) -> int:
    """How many of the attempt's model calls the embedded model refused."""
    return sum(1 for text in _errors(events) if text.startswith(REFUSED_MARK))


def guard_error(events: Iterable[Any]) -> str | None:
    """The run error the guards make of the attempt ('Runaway: ...' or 'ModelRefused:
    ...'), or None when neither refused a call."""
    errors = _errors(events)
    runaway = [t for t in errors if t.startswith(RUNAWAY_MARK)]
    if runaway:
        return f"Runaway: {runaway[0].removeprefix(RUNAWAY_MARK).strip()}"
    refused = [t for t in errors if t.startswith(REFUSED_MARK)]
    if refused:
        more = f" ({len(refused)} calls refused)" if len(refused) > 1 else ""
        return f"ModelRefused: {refused[0]}{more}"
    return None
