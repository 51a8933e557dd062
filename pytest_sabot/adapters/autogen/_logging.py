"""Magentic-One orchestrator records, read off the autogen_agentchat trace logger.

In autogen-agentchat 0.7.5 the Magentic-One orchestrator
(``teams/_group_chat/_magentic_one/_magentic_one_orchestrator.py``) writes its inner-loop
decisions only to ``logging.getLogger(autogen_agentchat.TRACE_LOGGER_NAME)`` at DEBUG level:

* ``Progress Ledger: {...}``: the parsed progress ledger, as the ``str()`` of a dict whose
  five entries (is_request_satisfied, is_in_loop, is_progress_being_made, next_speaker,
  instruction_or_question) each carry a ``reason`` and an ``answer``;
* ``Stall count exceeded, re-planning with the outer loop...``: the stall re-plan. A stall
  is a ledger answering "no progress" or "in a loop"; a progress ledger takes one stall off
  the count; at ``max_stalls`` the orchestrator rebuilds its task ledger and re-enters the
  outer loop. The run goes on, so the re-plan never shows in ``TaskResult.stop_reason``.

This module holds the pure reading of those lines (:func:`parse_ledger`,
:class:`LedgerFollower`) and :class:`TraceLoggerCapture`, a handler attached for exactly
one run and always removed again.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autogen_agentchat import TRACE_LOGGER_NAME

from pytest_sabot.core.log_capture import Loudness, ThreadLogCapture
from pytest_sabot.core.magentic_ledger import stall_reasons

LEDGER_PREFIX = "Progress Ledger: "
REPLAN_LINE = "Stall count exceeded, re-planning with the outer loop..."


def parse_ledger(message: str) -> dict[str, Any] | None:
    """The ledger dict of a ``Progress Ledger: {...}`` log message, else None."""
    if not message.startswith(LEDGER_PREFIX):
        return None
    try:
        value = ast.literal_eval(message[len(LEDGER_PREFIX) :])
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class LedgerRecord:
    """One progress ledger as the orchestrator logged it."""

    line: str
    ledger: dict[str, Any]


@dataclass(frozen=True)
class ReplanRecord:
    """One stall re-plan with the ledger reasons of the stalls that led to it."""

    line: str
    reason: str


OrchestratorRecord = LedgerRecord | ReplanRecord


@dataclass
class LedgerFollower:
    """Turns the orchestrator's log messages into ledger and re-plan records, in order.

    The reason of a re-plan is the list of stall reasons recorded since the previous
    re-plan (or the start), minus one (the oldest) per progress ledger in between, which
    mirrors how the orchestrator's own stall counter rises and falls.
    """

    pending: list[str] = field(default_factory=list)
    last_reasons: list[str] = field(default_factory=list)

    def feed(self, message: str) -> OrchestratorRecord | None:
        ledger = parse_ledger(message)
        if ledger is not None:
            reasons = stall_reasons(ledger)
            self.last_reasons = reasons
            if reasons:
                self.pending.append("; ".join(reasons))
            elif self.pending:
                self.pending.pop(0)
            return LedgerRecord(line=message, ledger=ledger)
        if message == REPLAN_LINE:
            reasons = self.pending or ["; ".join(self.last_reasons)]
            self.pending = []
            return ReplanRecord(line=message, reason=" | ".join(r for r in reasons if r))
        return None


class TraceLoggerCapture(ThreadLogCapture):
    """Attach a handler to the autogen_agentchat trace logger for one run.

    Use it as a context manager *inside* the run's event loop thread: only records logged
    by that thread and by the trace logger itself (not its children) are taken, so runs in
    other threads of the same process never bleed into this one. Every taken record is fed
    to a :class:`LedgerFollower`; each ledger or re-plan it yields goes to ``on_record`` at
    once (so trace order follows the run). An exception raised by ``on_record`` is kept and
    re-raised when the block exits, never swallowed by the logging machinery.
    """

    loudness = Loudness(TRACE_LOGGER_NAME, pin_children=True)

    def __init__(self, on_record: Callable[[OrchestratorRecord], None]) -> None:
        super().__init__()
        self._on_record = on_record
        self._follower = LedgerFollower()
        self.lines: list[str] = []

    def receive(self, record: logging.LogRecord) -> None:
        if record.name != TRACE_LOGGER_NAME:
            return
        message = record.getMessage()
        self.lines.append(message)
        parsed = self._follower.feed(message)
        if parsed is not None:
            self._on_record(parsed)
