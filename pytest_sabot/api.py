"""The public protocol for bringing your own pipeline: every name here is stable.

A **framework adapter** (docs/ADAPTERS.md) is a package with a light factory returning a
:class:`FrameworkAdapter` (what the framework is: packages and pins, the extra installing
them, warnings, cost estimate, mapping file, Magentic-like configurations) and a pipeline
``run(ctx: RunContext) -> None`` that builds the framework's own pipeline from what the
:class:`RunContext` hands it: the task's public view as prompts, :class:`ToolHandle` tools
with the operator seams behind them, one model endpoint per agent with HTTP clients, the
handoff channel and a :class:`TraceSink` for the events of its own surfaces
(:data:`ADAPTER_EVENT_KINDS`). It registers through the ``pytest_sabot.adapters`` entry-point
group (:data:`ENTRY_POINT_GROUP`), exactly as the shipped LangGraph, CrewAI, AutoGen and
agent-framework adapters do.

A **trusted local agent** (``pytest --sabot-agent mypkg.agent:run --trust-local-agent``,
docs/TRUSTED_AGENTS.md) is a callable ``run(ctx: AgentContext)`` run in a supervised child
process; it calls the task's tools (:class:`ToolSpec`) and its model endpoints
(:class:`ModelEndpoint`), and reports its own checks through :class:`OwnChecks`
(``ctx.checks``); a request the harness refuses raises :class:`Refusal`.

Everything here is re-exported from pytest-sabot's own modules, so an adapter written
against this module and a shipped one get the very same objects. The harness, the gateway,
the operators and the scorer are not part of the protocol: a pipeline never needs them.
"""

from __future__ import annotations

from pytest_sabot.core.context import (
    WORKER_MODEL_CALL_CAP,
    Messages,
    RunContext,
    ToolHandle,
    TraceSink,
)
from pytest_sabot.core.frameworks import (
    ENTRY_POINT_GROUP,
    STANDARD_FRAMEWORKS,
    AdapterRun,
    FrameworkAdapter,
    FrameworkNotInstalled,
)
from pytest_sabot.core.models.trace import (
    ADAPTER_EVENT_KINDS,
    EVENT_KINDS,
    REPORTED_EVENT_KINDS,
)
from pytest_sabot.core.verdict_token import (
    VERDICT_PATTERN,
    Verdict,
    routing_verdict,
    strip_flags_head,
)
from pytest_sabot.trusted.channel import Refusal
from pytest_sabot.trusted.protocol import ModelEndpoint, ToolSpec
from pytest_sabot.trusted.sabot_child import AgentContext, OwnChecks

__all__ = [
    "ADAPTER_EVENT_KINDS",
    "ENTRY_POINT_GROUP",
    "EVENT_KINDS",
    "REPORTED_EVENT_KINDS",
    "STANDARD_FRAMEWORKS",
    "VERDICT_PATTERN",
    "WORKER_MODEL_CALL_CAP",
    "AdapterRun",
    "AgentContext",
    "FrameworkAdapter",
    "FrameworkNotInstalled",
    "Messages",
    "ModelEndpoint",
    "OwnChecks",
    "Refusal",
    "RunContext",
    "ToolHandle",
    "ToolSpec",
    "TraceSink",
    "Verdict",
    "routing_verdict",
    "strip_flags_head",
]
