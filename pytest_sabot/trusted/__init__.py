"""Trusted local agents: a user's callable run in a supervised child process.

The parent (the harness) keeps the world, the evidence and the tools; the child gets only
the public view, the tool catalog and model endpoints, and reaches the parent's tools and
clock only through the protocol (:mod:`pytest_sabot.trusted.protocol`). The supervisor
enforces a real-time deadline, refuses and records late requests, captures the child's
stdout and stderr into a log file and records a crash as what it is. This module knows
nothing of the lab or of Sabot tasks: a caller supplies the ``start`` message, a binding
for the child side, and the handlers that answer requests. See docs/TRUSTED_AGENTS.md.

Not a sandbox: the child runs with the user's permissions. Run only code you trust.
"""

from __future__ import annotations

from pytest_sabot.trusted.channel import ChildChannel, Refusal
from pytest_sabot.trusted.context import Bound, TrustedContext, output_text, plain_binding
from pytest_sabot.trusted.protocol import (
    PROTOCOL_VERSION,
    ModelEndpoint,
    Start,
    ToolSpec,
    protocol_schema,
)
from pytest_sabot.trusted.report import LateRequest, ProcessEnd, ProcessReport
from pytest_sabot.trusted.supervisor import (
    Handlers,
    Outcome,
    Supervisor,
    TargetError,
    Unreadable,
    child_environment,
)
from pytest_sabot.trusted.target import is_target, load_target

__all__ = [
    "PROTOCOL_VERSION",
    "Bound",
    "ChildChannel",
    "Handlers",
    "LateRequest",
    "ModelEndpoint",
    "Outcome",
    "ProcessEnd",
    "ProcessReport",
    "Refusal",
    "Start",
    "Supervisor",
    "TargetError",
    "ToolSpec",
    "TrustedContext",
    "Unreadable",
    "child_environment",
    "is_target",
    "load_target",
    "output_text",
    "plain_binding",
    "protocol_schema",
]
