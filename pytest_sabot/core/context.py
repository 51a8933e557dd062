"""What a framework adapter is given to build and run one pipeline.

This module is the contract between the harness (tasks, tools, operators, trace, gateway)
and the adapters (LangGraph, CrewAI, AutoGen). Adapters know frameworks and nothing of
scoring; the harness knows seams and nothing of frameworks. The object an adapter receives
is a ``pytest_sabot.harness.pipeline_context.PipelineContext``: nothing reachable from it
holds the task's private spec, a ground-truth note or the pass criterion (SPEC.md I39).

Pipeline shape for every framework (section 8): load -> worker -> review -> (revise | emit),
with exactly one revise loop. The stage protocol an adapter follows:

1. ``ctx.worker_prompt(round=0)`` gives the worker's system and user messages. They come
   from the task's public view as the *worker* sees it (the O5 seam lives in there).
2. The worker agent runs in the framework, reaching its model at ``ctx.base_url("worker")``
   with the token ``ctx.api_key`` over ``ctx.http_client()`` (or, in an event loop,
   ``ctx.http_async_client()``), and calling ``ctx.tools`` (data, check, write) through the
   framework's own tool mechanism. The tools record tool_call/tool_result/effect events
   and apply O1/O2/O6.
3. The worker's final reply goes through ``ctx.handoff("worker", "reviewer", text)``,
   which records the message and applies O3; the reviewer sees only the delivered text.
4. ``ctx.reviewer_prompt(delivered, round)`` gives the reviewer's messages (materials as
   the reviewer sees them, the draft, the tool log, the workspace listing, the verdict
   protocol and, when the wave says so, the FLAGS addendum).
5. The adapter records every framework surface it observes with ``ctx.trace.emit`` using
   the kinds of pytest_sabot.core.models.trace (review, guardrail, route, retry, interrupt,
   escalation, replan, ledger, stop_reason, agent_output).
6. ``ctx.sync_model_calls()`` after each stage turns the gateway's exchanges for this run
   into model_call events (and the O4 injection/probe when the downgrade served a call).
7. ``ctx.emit(text)`` records the final artifact (stripping a Magentic FLAGS head line).

A worker pass asks for tools on at most ``WORKER_MODEL_CALL_CAP`` model calls. When every
one of them asked for tools, the pass ends the same way in every framework: one more model
call with no tools offered, over the conversation so far, whose reply is the draft (CrewAI's
``max_iter`` final answer, AutoGen's reflection after ``max_tool_iterations``, the LangGraph
adapter's own loop). The adapter records a ``cap`` event right after that call
(SPEC.md S8.12, I33).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pytest_sabot.core.models.cells import Cell

WORKER_MODEL_CALL_CAP = 8
"""Tool-using model calls one worker pass may make before it must answer (SPEC.md S8.12)."""


@dataclass(frozen=True)
class Messages:
    """A system and a user message for one agent turn."""

    system: str
    """The system message: the agent's role, the protocol it follows."""
    user: str
    """The user message: the task's public view as this agent sees it (materials, brief,
    contract; a reviewer's also carries the delivered draft and the worker's tool log)."""


@dataclass(frozen=True)
class ToolHandle:
    """One task tool as a framework-neutral callable.

    ``parameters`` is a JSON Schema object for the arguments; ``invoke`` takes the parsed
    arguments and the calling agent's role and returns the observation text the agent sees.
    """

    name: str
    """The tool's name, as the framework offers it to a model."""
    description: str
    """What the tool does, for the model (from the task's public view)."""
    parameters: dict[str, Any]
    """JSON Schema object of the arguments."""
    invoke: Callable[[dict[str, Any]], str]
    """Call the tool with parsed arguments; returns the observation the agent is shown. The
    harness records the call, its result and any effect, and applies the operator seams."""
    role: Literal["data", "check", "write"] | None = None
    """The tool's role in the task (None when the harness does not say)."""
    artifact_arguments: Callable[[str], dict[str, Any]] | None = None
    """The arguments that apply a check or write tool to an artifact text, for a pipeline
    whose harness side calls the tool itself (the Magentic-One post-run check and write
    seams); None for a data tool."""


class TraceSink(Protocol):
    """The run's trace, as an adapter writes to it."""

    def emit(self, kind: str, component: str, text: str = "", **data: Any) -> Any:
        """Append one event of ``kind`` (one of ``ADAPTER_EVENT_KINDS`` for an adapter),
        produced by ``component``, with its free text and its payload fields; the payload is
        validated against the kind's model (pytest_sabot.core.models.trace) and a wrong one
        raises before anything is written."""
        ...

    @property
    def next_seq(self) -> int:
        """The seq the next event will get."""
        ...


class RunContext(Protocol):
    """Everything one run of one cell needs; built by the harness, used by an adapter."""

    @property
    def cell(self) -> Cell:
        """The cell this run is: framework, config, operator (None for a baseline), task,
        seed. Route on ``cell.config``; never branch on the operator."""
        ...

    @property
    def run_dir(self) -> Path:
        """The run's own directory (a framework that writes files keeps them here)."""
        ...

    @property
    def trace(self) -> TraceSink:
        """Where the adapter records the surfaces it observes."""
        ...

    @property
    def flags_protocol(self) -> bool:
        """Whether the wave's FLAGS protocol is on (the prompts already carry it)."""
        ...

    @property
    def model_name(self) -> str:
        """The model name adapters pass to their framework client."""
        ...

    @property
    def api_key(self) -> str:
        """A per-run token for the gateway; never a provider key."""
        ...

    def base_url(self, agent: str) -> str:
        """OpenAI-compatible base URL for one agent of this run (ends in /v1)."""
        ...

    def scoped_endpoint(self, agent: str) -> tuple[str, str]:
        """(base URL, credential) of one agent for a pipeline outside the harness (a
        trusted agent, an MCP client): the credential opens this run's model calls as that
        agent and nothing else, and the URL names neither the gateway's secret nor the cell
        (``pytest_sabot.harness.endpoints``)."""
        ...

    def http_client(self) -> Any:
        """An ``httpx.Client`` for the framework's synchronous model clients (shared by the
        process, never closed by the adapter): hand it to the framework instead of letting
        it build its own (each of those loads the CA bundle again)."""
        ...

    def http_async_client(self) -> Any:
        """A new ``httpx.AsyncClient`` for one event loop of this run; the adapter closes it
        (``await client.aclose()``) when that loop is done."""
        ...

    @property
    def tools(self) -> list[ToolHandle]:
        """The task's tools for the worker (data, check, write), operator seams applied."""
        ...

    def worker_prompt(self, round: int, feedback: str = "") -> Messages:
        """Worker messages for a pass; round 1 carries the reject reason as feedback."""
        ...

    def handoff(self, sender: str, receiver: str, text: str) -> str:
        """Send text through the harness channel; returns what the receiver gets (O3)."""
        ...

    def reviewer_prompt(self, delivered: str, round: int) -> Messages:
        """Reviewer/critic messages for the delivered draft (verdict protocol, FLAGS)."""
        ...

    def guardrail_text(self) -> str:
        """The LLM-guardrail instruction (CrewAI guardrail config): output contract only."""
        ...

    def check_contract(self, artifact: str) -> list[str]:
        """Deterministic output-contract check (the fairness rule): failure reasons, [] = ok."""
        ...

    def magentic_task(self) -> str:
        """The whole task for a Magentic-One team, FLAGS head line in the contract if on."""
        ...

    def sync_model_calls(self) -> None:
        """Pull this run's gateway exchanges into the trace as model_call events."""
        ...

    def emit(self, text: str) -> None:
        """Record the final artifact and the world's required effects."""
        ...
