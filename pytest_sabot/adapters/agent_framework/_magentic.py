"""Reading agent-framework's Magentic orchestration (agent-framework-orchestrations 1.4.0).

The Magentic orchestrator (``agent_framework_orchestrations/_magentic.py``) publishes its
inner-loop decisions as workflow events of type ``magentic_orchestrator`` whose data is a
``MagenticOrchestratorEvent``:

* ``PLAN_CREATED`` (the first task ledger) and ``REPLANNED`` (a rebuilt task ledger), each
  carrying the ledger message;
* ``PROGRESS_LEDGER_UPDATED``, carrying the parsed ``MagenticProgressLedger`` (five entries,
  each a ``reason`` and an ``answer``).

A stall is a ledger that is not satisfied and answers "no progress" or "in a loop"; any
other unsatisfied ledger takes one stall off the count. When the count goes *above*
``max_stall_count`` the orchestrator logs ``Magentic Orchestrator: Stalling detected after
N rounds`` (DEBUG, logger ``agent_framework_orchestrations._magentic``), resets its context
(the stall count starts again from 0), rebuilds the task ledger and publishes
``REPLANNED``. A progress ledger that cannot be produced (the model's JSON does not parse
after the manager's own retries, or its call fails) also resets and re-plans, after the
WARNING line ``Magentic Orchestrator: Progress ledger creation failed, triggering reset:
...``. Neither ends the run.

This module holds the pure reading of those events (:class:`StallFollower`) and
:class:`MagenticLogCapture`, a handler on the orchestrator's logger attached for exactly one
run and always removed again. It imports nothing of agent-framework, so it can be tested
and imported without the framework installed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_sabot.core.log_capture import Loudness, ThreadLogCapture
from pytest_sabot.core.magentic_ledger import request_satisfied, stall_reasons

__all__ = [
    "LEDGER_FAILED_PREFIX",
    "MAGENTIC_LOGGER",
    "STALL_LINE",
    "MagenticLogCapture",
    "StallFollower",
    "stall_reasons",
]

MAGENTIC_LOGGER = "agent_framework_orchestrations._magentic"
"""The logger of the Magentic orchestrator module in agent-framework-orchestrations 1.4.0."""
STALL_LINE = re.compile(r"^Magentic Orchestrator: Stalling detected after \d+ rounds$")
"""The DEBUG line the orchestrator logs right before a stall re-plan."""
LEDGER_FAILED_PREFIX = "Magentic Orchestrator: Progress ledger creation failed, triggering reset"
"""The start of the WARNING line logged before a re-plan caused by a failed progress ledger."""


@dataclass
class StallFollower:
    """Mirrors the orchestrator's stall counter over the published progress ledgers.

    ``feed`` takes each ``PROGRESS_LEDGER_UPDATED`` ledger (as its ``to_dict()``) in order;
    ``replanned`` is called at each ``REPLANNED`` event and returns the re-plan's reason and
    whether the mirrored count says a stall caused it. The reason is the stall reasons
    recorded since the previous re-plan, less the oldest one per progress ledger in between,
    which is how the count itself rises and falls.
    """

    max_stall_count: int
    count: int = 0
    pending: list[str] = field(default_factory=list)
    stall_replans: int = 0  # re-plans the ledgers account for (count above the limit)

    def feed(self, ledger: Mapping[str, Any]) -> None:
        if request_satisfied(ledger):
            return
        reasons = stall_reasons(ledger)
        if reasons:
            self.count += 1
            self.pending.append("; ".join(reasons))
        else:
            self.count = max(0, self.count - 1)
            if self.pending:
                self.pending.pop(0)

    @property
    def stalled_out(self) -> bool:
        """The mirrored count is above the limit: the orchestrator re-plans now."""
        return self.count > self.max_stall_count

    def replanned(self) -> tuple[str, bool]:
        """The reason of the re-plan being published, and whether a stall caused it."""
        by_stall = self.stalled_out
        reason = " | ".join(r for r in self.pending if r)
        if by_stall:
            self.stall_replans += 1
        # The orchestrator's reset starts the stall count again from zero.
        self.count = 0
        self.pending = []
        return reason, by_stall


# --------------------------------------------------------------------------- log capture


class MagenticLogCapture(ThreadLogCapture):
    """The orchestrator's re-plan lines, for one run.

    Use it as a context manager inside the run's event-loop thread: only records logged by
    that thread are kept, so runs in other threads of the same process never bleed in.
    ``take_replan_line()`` hands over the line logged before the re-plan now being
    published (a stall line or a failed-ledger line), or ``""`` when none was logged.
    """

    loudness = Loudness(MAGENTIC_LOGGER)

    def __init__(self) -> None:
        super().__init__()
        self._pending: list[str] = []
        self.stall_lines = 0  # every stall line logged during the run

    def receive(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if STALL_LINE.match(message):
            self.stall_lines += 1
            self._pending.append(message)
        elif message.startswith(LEDGER_FAILED_PREFIX):
            self._pending.append(message)

    def take_replan_line(self) -> str:
        if not self._pending:
            return ""
        return self._pending.pop(0)
