"""Reading a Magentic-One progress ledger: why a round counts as a stall.

AutoGen's MagenticOneGroupChat and Agent Framework's Magentic orchestrator keep the same
progress ledger (its ``to_dict()``: each entry an ``answer`` and a ``reason``) and count a
stall the same way, so both adapters read the stall reasons of a re-plan with this one
function.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The ledger entries whose answers make a round a stall, and the answer that does.
_STALL_ANSWERS: tuple[tuple[str, bool, str], ...] = (
    ("is_progress_being_made", False, "no progress"),
    ("is_in_loop", True, "in a loop"),
)


def _entry(ledger: Mapping[str, Any], key: str) -> tuple[Any, str]:
    entry = ledger.get(key)
    if not isinstance(entry, Mapping):
        return None, ""
    return entry.get("answer"), str(entry.get("reason", ""))


def request_satisfied(ledger: Mapping[str, Any]) -> bool:
    """The ledger says the request is satisfied (the orchestrator then finishes)."""
    satisfied, _ = _entry(ledger, "is_request_satisfied")
    return satisfied is True


def stall_reasons(ledger: Mapping[str, Any]) -> list[str]:
    """Why this progress ledger counts as a stall: its no-progress / in-loop reasons.

    Empty when the ledger reports progress and no loop, or when the request is satisfied
    (the orchestrator then prepares its final answer without counting stalls).
    """
    if request_satisfied(ledger):
        return []
    reasons = []
    for key, stalled_answer, label in _STALL_ANSWERS:
        answer, reason = _entry(ledger, key)
        if answer is stalled_answer:
            reasons.append(f"{label}: {reason}" if reason else label)
    return reasons
