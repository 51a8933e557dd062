"""The fault schedule of one run: which entry a request matches, and what became of each.

Entries are consulted in file order; the first whose window (or a rate limiter's retry
window) covers the request takes it. Any other entry whose window also covers it records
a suppression naming the entry that took it, so coverage never silently loses a match.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_sabot.lab.faults import FAULTS
from pytest_sabot.lab.faults.base import (
    Activation,
    FaultCoverage,
    FaultOperator,
    Suppression,
    coverage_status,
)
from pytest_sabot.lab.faults.call import EntryState, Intercept


@dataclass
class _Armed:
    entry: Any  # one of the FaultEntry models
    operator: FaultOperator
    state: EntryState = field(default_factory=EntryState)
    matched: list[str] = field(default_factory=list)
    activations: list[Activation] = field(default_factory=list)
    suppressions: list[Suppression] = field(default_factory=list)


class FaultSchedule:
    """Per-run matching state of a scenario's ``faults:`` list."""

    def __init__(self, entries: list[Any]) -> None:
        self._armed = [_Armed(entry=e, operator=FAULTS[e.fault]) for e in entries]

    def match(self, request_id: str, tool: str, call_number: int, now_ms: int) -> (
            _Armed | None):
        """The entry that takes this request, if any (recording every match)."""
        taken: _Armed | None = None
        for armed in self._armed:
            entry = armed.entry
            if entry.tool != tool:
                continue
            if not (entry.in_window(call_number) or armed.operator.holds(armed.state, now_ms)):
                continue
            armed.matched.append(request_id)
            if taken is None:
                taken = armed
            else:
                armed.suppressions.append(Suppression(
                    request_id=request_id,
                    reason=f"schedule entry {taken.entry.id!r} took this request",
                ))
        return taken

    @staticmethod
    def settle(armed: _Armed, request_id: str, result: Intercept) -> None:
        """Record whether the entry activated on the request or was suppressed."""
        if result.activated:
            armed.activations.append(Activation(request_id=request_id, note=result.note,
                                                detail=result.detail))
        else:
            armed.suppressions.append(Suppression(request_id=request_id, reason=result.note))

    def coverage(self, requests_per_tool: dict[str, int]) -> list[FaultCoverage]:
        """Coverage of every entry, in schedule order."""
        out: list[FaultCoverage] = []
        for armed in self._armed:
            entry = armed.entry
            note = ""
            if not armed.matched:
                made = requests_per_tool.get(entry.tool, 0)
                note = (f"never matched: the agent made {made} request(s) to {entry.tool}; "
                        f"the window starts at request {entry.call}")
            out.append(FaultCoverage(
                id=entry.id, fault=entry.fault, operator=armed.operator.operator,
                tool=entry.tool, required=entry.required,
                status=coverage_status(armed.matched, armed.activations, armed.suppressions),
                matched=list(armed.matched), activations=list(armed.activations),
                suppressions=list(armed.suppressions), note=note,
            ))
        return out
