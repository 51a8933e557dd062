"""The lab's shared names: tools, faults, error codes, effect kinds and gate outcomes.

Every other lab module speaks in these terms, so a scenario file, a run record and the
tool catalog can never disagree on a spelling.
"""

from __future__ import annotations

from typing import Literal, get_args

# The fault kinds and the lab operators' ids are derived from the operators' declarations
# (core/operators.py): one lab fault module per kind under lab/faults/.
from pytest_sabot.core.operators import FaultKind as FaultKind
from pytest_sabot.core.operators import LabOperatorId as LabOperatorId

ToolName = Literal[
    "get_customer",
    "find_tickets",
    "get_ticket",
    "create_ticket",
    "assign_ticket",
    "notify_customer",
]
WriteTool = Literal["create_ticket", "assign_ticket", "notify_customer"]
ALL_TOOLS: tuple[str, ...] = get_args(ToolName)
WRITE_TOOLS: frozenset[str] = frozenset(get_args(WriteTool))
READ_TOOLS: frozenset[str] = frozenset(ALL_TOOLS) - WRITE_TOOLS


ErrorCode = Literal[
    "timeout",
    "rate_limited",
    "version_conflict",
    "not_found",
    "invalid_arguments",
    "idempotency_key_reuse",
    "forbidden",
    "unknown_tool",
]

Priority = Literal["low", "normal", "high", "urgent"]
ApprovalState = Literal["not_required", "pending", "approved"]
TicketStatus = Literal["open", "assigned"]
IdempotencySupport = Literal["supported", "unsupported"]

EffectKind = Literal["ticket_created", "ticket_revised", "ticket_approved", "ticket_assigned",
                     "notification_sent"]
Actor = Literal["agent", "approver"]

GateOutcome = Literal["pass", "fail", "error", "inconclusive"]
"""A gate's outcome; its exit code is ``core.exit_codes.GATE_EXIT[outcome]``."""

ExecutionStatus = Literal[
    "completed",
    "agent_error",
    "deadline_exceeded",
    "budget_exhausted",
    "cancelled",
    "harness_error",
]

RUN_FILE = "run.json"
