"""The AutoGen / Magentic-One pipeline (autogen-agentchat, -core, -ext[openai] 0.7.5).

Both configs of standard section 8, built from AutoGen's own primitives and driven through
the harness contract of :mod:`pytest_sabot.core.context`. Every agent reaches its model
through ``OpenAIChatCompletionClient`` at the gateway URL of its role, with no temperature
(section 8) and ``max_retries=0`` (the gateway is the only retry layer).

Default config (load -> worker -> critic -> revise | emit)
    Each stage is its own single-participant ``RoundRobinGroupChat([agent],
    termination_condition=TextMentionTermination(...), max_turns=1)``. The worker is an
    ``AssistantAgent`` holding the task's tools (each call goes through
    ``ToolHandle.invoke``); it loops tool calls and reflects on them, so its one turn ends
    in a draft. The draft crosses ``ctx.handoff("worker", "reviewer", ...)`` to the critic
    (an ``AssistantAgent`` on the reviewer prompt, verdict-token protocol). Recorded: the
    draft (agent_output), the critic reply (review, component ``critic``), and every
    team's ``TaskResult.stop_reason`` verbatim (stop_reason). A ``VERDICT: REJECT`` in the
    first round records a retry (source ``revise``, the reject reason) and runs the worker
    and critic once more with the reason as feedback. The delivered draft of the last round
    is emitted.

Guardrail config (Magentic-One)
    ``MagenticOneGroupChat([worker], model_client=<orchestrator client>, max_stalls=3)``
    runs on ``ctx.magentic_task()``, whose output contract carries the FLAGS head line in
    waves 2+. ``max_stalls`` is the standard's pin; every other setting of the team is the
    framework's default (``max_turns`` 20 in 0.7.5; SPEC.md S8.12). There is no reviewer
    stage: the orchestrator's progress ledger is the review mechanism. Its records come from
    the autogen_agentchat trace logger (:mod:`pytest_sabot.adapters.autogen._logging`): each
    ``Progress Ledger: ...`` line becomes a ledger event and each ``Stall count exceeded,
    re-planning with the outer loop...`` line a replan event whose reason is the ledgers'
    recorded no-progress / in-loop reasons. A stall re-plan does not end the run (0.7.5
    re-enters the outer loop),
    so it is visible only there. ``TaskResult.stop_reason`` is recorded verbatim: the
    satisfied ledger's reason on completion, ``Max rounds reached.`` when the orchestrator
    runs out of rounds (a ``cap`` event, team_turns, records that the orchestrator then
    prepared its final answer). The orchestrator's final answer is the artifact.

    The re-plan is also read from the public message stream (SPEC.md I35): re-entering the
    outer loop re-issues the task ledger, an orchestrator message that carries the team's
    whole task, so every such message after the first is a re-plan. The two readings are
    written side by side in one ``surface_check`` event after the team run; the trace-logger
    record stays the one the mapping counts.

    Structural carve-out (standard section 10.6). In this config the O2 (check), O3
    (handoff) and O6 (write) seams are exercised only after the team run has completed: the
    worker is given the task's data tool alone; once the team has finished, the harness
    side of the pipeline passes the final answer through ``ctx.handoff("orchestrator",
    "emitter", ...)`` and calls the check and write tools on the delivered text itself,
    through the same ToolHandles, before ``ctx.emit``. Those faults therefore land where no
    component executes with them in view, which is why the standard registers these cells
    as structural zeros.

Worker cap (SPEC.md I33): every worker ``AssistantAgent`` has
``max_tool_iterations=WORKER_MODEL_CALL_CAP`` and ``reflect_on_tool_use=True``, so a turn
whose every allowed model call asked for tools ends with AutoGen's reflection call, made
with no tools; the adapter counts the worker's ``ToolCallRequestEvent`` messages of the turn
and writes a ``cap`` event after that call.

Every run gets a fresh event loop; the trace-logger handler lives exactly as long as the
team run it observes and is removed even when the run fails.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult, TerminationCondition
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    TextMessage,
    ToolCallRequestEvent,
)
from autogen_agentchat.teams import MagenticOneGroupChat, RoundRobinGroupChat
from autogen_core import CancellationToken
from autogen_core.models import ModelInfo
from autogen_core.tools import BaseTool, ToolSchema
from autogen_ext.models.openai import OpenAIChatCompletionClient
from pydantic import BaseModel, ConfigDict

from pytest_sabot.adapters.autogen._logging import (
    LedgerRecord,
    OrchestratorRecord,
    ReplanRecord,
    TraceLoggerCapture,
)
from pytest_sabot.core.context import WORKER_MODEL_CALL_CAP, RunContext, ToolHandle
from pytest_sabot.core.loops import in_fresh_loop
from pytest_sabot.core.verdict_token import rejection_text, routing_verdict, strip_flags_head

__all__ = [
    "MAX_ROUNDS_REACHED",
    "MAX_STALLS",
    "MAX_TURNS",
    "ORCHESTRATOR",
    "HarnessTool",
    "arguments_for_artifact",
    "parse_verdict",
    "run",
    "tool_role",
]

MAX_STALLS = 3
"""Magentic-One stall threshold before a re-plan (section 8: max_stalls=3)."""
MAX_TURNS: int = inspect.signature(MagenticOneGroupChat).parameters["max_turns"].default
"""The orchestrator's round limit: the framework's default (20 in 0.7.5), never set here;
past it the team stops with 'Max rounds reached.' after a final answer (SPEC.md S8.12)."""
WORKER_TOOL_ITERATIONS = WORKER_MODEL_CALL_CAP
"""Tool-using model calls one worker turn may make before AutoGen's reflection call."""
MAX_ROUNDS_REACHED = "Max rounds reached."
"""The 0.7.5 stop reason at the round limit (section 5: the block surface, matched exactly)."""
ORCHESTRATOR = "MagenticOneOrchestrator"
"""Name autogen-agentchat 0.7.5 gives the Magentic-One group chat manager."""

WORKER = "worker"
CRITIC = "critic"
WORKER_STOP_TEXT = "TERMINATE"
CRITIC_STOP_TEXT = "VERDICT:"

MAGENTIC_WORKER_DESCRIPTION = (
    "Worker: reads the task's materials, looks data up with its tool and writes the "
    "requested content."
)
# The Magentic worker's own instructions. The task itself (materials, contract) reaches it
# through the orchestrator's task ledger; ctx.worker_prompt is not used in this config, so
# the worker's view of the materials is the one in ctx.magentic_task() alone.
MAGENTIC_WORKER_SYSTEM = (
    "You are the worker of this team. Carry out the orchestrator's instructions for the "
    "task in the conversation: read the materials given there, look data up with your tool "
    "when needed, and answer with exactly the content the task's output contract asks for."
)

# Capabilities declared for a model name autogen does not know (the gateway's names).
UNKNOWN_MODEL_INFO = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=True,
    family="unknown",
    structured_output=True,
)


# autogen-ext 0.7.5 logs every structured-output call with ``result.model_dump()`` on the
# OpenAI SDK's ParsedChatCompletion, which makes pydantic warn about the parsed progress
# ledger (a LedgerEntry where the SDK's generic type says None). Harmless and outside this
# package; only that exact warning is silenced (again per run: pytest resets the warning
# filters around every test).
def _silence_ledger_dump_warning() -> None:
    warnings.filterwarnings(
        "ignore",
        message=r"(?s)Pydantic serializer warnings:.*input_type=LedgerEntry",
        category=UserWarning,
    )


ToolRole = Literal["data", "check", "write"]
_T = TypeVar("_T")


# --------------------------------------------------------------------------- pure helpers


def parse_verdict(text: str) -> tuple[Literal["approve", "reject"], str] | None:
    """First verdict token of a critic reply (section 5 parse rule): (verdict, reason)."""
    verdict = routing_verdict(text)
    if verdict.decision is None:
        return None
    return verdict.decision, verdict.reason


_ROLE_WORDS: tuple[tuple[ToolRole, tuple[str, ...]], ...] = (
    ("write", ("write", "save", "commit", "store", "publish")),
    ("check", ("check", "validat", "verif", "test", "lint")),
)


def tool_role(handle: ToolHandle) -> ToolRole:
    """The tool's role: as the harness states it, else read from the tool's name."""
    if handle.role is not None:
        return handle.role
    name = handle.name.lower()
    for role, words in _ROLE_WORDS:
        if any(word in name for word in words):
            return role
    return "data"


_FILE_ARGUMENT = re.compile(r"(name|path|file)", re.IGNORECASE)
_FILE_IN_TEXT = re.compile(r"(?<![\w.-])[\w-]{2,}\.[A-Za-z]\w{0,7}\b")


def _file_name_for(prop: str, spec: dict[str, Any]) -> str:
    for key in ("const", "default"):
        if isinstance(spec.get(key), str):
            return str(spec[key])
    enum = spec.get("enum")
    if isinstance(enum, list) and enum and isinstance(enum[0], str):
        return enum[0]
    found = _FILE_IN_TEXT.search(str(spec.get("description", "")))
    if found is None:
        raise ValueError(
            f"tool argument '{prop}': expected a file name the harness can supply "
            "(ToolHandle.artifact_arguments, or a const/default/enum/example in the schema)"
        )
    return found.group(0)


def arguments_for_artifact(handle: ToolHandle, text: str) -> dict[str, Any]:
    """Arguments that apply a check or write tool to an artifact text.

    The harness's own ``artifact_arguments`` wins. Without it, the tool's JSON Schema is
    read: a file-name-like string argument gets the name the schema names, every other
    required string argument gets the text.
    """
    if handle.artifact_arguments is not None:
        return handle.artifact_arguments(text)
    properties: dict[str, Any] = handle.parameters.get("properties", {}) or {}
    required = list(handle.parameters.get("required", list(properties)))
    arguments: dict[str, Any] = {}
    for prop in required:
        spec = properties.get(prop, {})
        if spec.get("type", "string") != "string":
            continue
        is_file = _FILE_ARGUMENT.search(prop) is not None and len(required) > 1
        arguments[prop] = _file_name_for(prop, spec) if is_file else text
    return arguments


def _last_text(messages: Sequence[BaseAgentEvent | BaseChatMessage], source: str) -> str | None:
    for message in reversed(messages):
        if isinstance(message, TextMessage) and message.source == source:
            return message.content
    return None


# --------------------------------------------------------------------------- autogen parts


class _OpenArgs(BaseModel):
    """Arguments as the model sent them; the ToolHandle's schema is what the model sees."""

    model_config = ConfigDict(extra="allow")


class HarnessTool(BaseTool[_OpenArgs, BaseModel]):
    """An AutoGen tool whose every call goes through the harness's ToolHandle.

    ``before_call`` runs first (the pipeline passes ``ctx.sync_model_calls``), so the model
    call that asked for the tool is in the trace before the tool call it produced.
    """

    def __init__(self, handle: ToolHandle, before_call: Callable[[], None]) -> None:
        super().__init__(_OpenArgs, BaseModel, handle.name, handle.description)
        self._handle = handle
        self._before_call = before_call

    @property
    def schema(self) -> ToolSchema:
        parameters: Any = dict(self._handle.parameters)
        return ToolSchema(
            name=self._handle.name,
            description=self._handle.description,
            parameters=parameters,
        )

    async def run(self, args: _OpenArgs, cancellation_token: CancellationToken) -> Any:
        self._before_call()
        return self._handle.invoke(args.model_dump())


def _model_client(ctx: RunContext, agent: str) -> OpenAIChatCompletionClient:
    common: dict[str, Any] = {
        "model": ctx.model_name,
        "base_url": ctx.base_url(agent),
        "api_key": ctx.api_key,
        "max_retries": 0,
        # The client of this run's event loop; closing the model client closes it.
        "http_client": ctx.http_async_client(),
    }
    try:
        return OpenAIChatCompletionClient(**common)
    except ValueError:  # a model name autogen has no capability table for
        return OpenAIChatCompletionClient(**common, model_info=UNKNOWN_MODEL_INFO)


async def _run_team(
    team: RoundRobinGroupChat | MagenticOneGroupChat,
    task: str,
    on_message: Any = None,
) -> TaskResult:
    result: TaskResult | None = None
    async for item in team.run_stream(task=task):
        if isinstance(item, TaskResult):
            result = item
        elif on_message is not None:
            on_message(item)
    if result is None:
        raise RuntimeError("the AutoGen team ended without a TaskResult")
    return result


def _record_stop_reason(ctx: RunContext, component: str, result: TaskResult) -> None:
    if result.stop_reason is not None:
        ctx.trace.emit("stop_reason", component, result.stop_reason)


def _record_worker_cap(ctx: RunContext, round_: int) -> None:
    """The worker turn used every allowed tool iteration and answered on the reflection
    call (no tools offered), the last model call synced before this event."""
    ctx.trace.emit(
        "cap",
        WORKER,
        cap="worker_model_calls",
        limit=WORKER_TOOL_ITERATIONS,
        setting="max_tool_iterations",
        ending="forced_final_answer",
        round=round_,
    )


# --------------------------------------------------------------------------- default config


async def _one_turn(
    ctx: RunContext, agent: AssistantAgent, stop_text: str, task: str
) -> tuple[TaskResult, str]:
    """One turn of one agent, in a team of its own that ends when it says ``stop_text``:
    the team's result and the agent's last text (RuntimeError when it said nothing)."""
    stop: TerminationCondition = TextMentionTermination(stop_text, sources=[agent.name])
    team = RoundRobinGroupChat([agent], termination_condition=stop, max_turns=1)
    result = await _run_team(team, task)
    text = _last_text(result.messages, agent.name)
    if text is None:
        raise RuntimeError(
            f"the {agent.name} turn produced no text (stop: {result.stop_reason!r})"
        )
    ctx.sync_model_calls()
    return result, text

async def _worker_turn(
    ctx: RunContext, client: OpenAIChatCompletionClient, round_: int, feedback: str
) -> str:
    messages = ctx.worker_prompt(round=round_, feedback=feedback)
    worker = AssistantAgent(
        WORKER,
        client,
        tools=[HarnessTool(h, ctx.sync_model_calls) for h in ctx.tools],
        system_message=messages.system,
        reflect_on_tool_use=True,
        max_tool_iterations=WORKER_TOOL_ITERATIONS,
    )
    result, draft = await _one_turn(ctx, worker, WORKER_STOP_TEXT, messages.user)
    asked = sum(
        1 for m in result.messages if isinstance(m, ToolCallRequestEvent) and m.source == WORKER
    )
    if asked >= WORKER_TOOL_ITERATIONS:
        _record_worker_cap(ctx, round_)
    stage = "worker" if round_ == 0 else "revise"
    ctx.trace.emit("agent_output", WORKER, draft, stage=stage, round=round_)
    _record_stop_reason(ctx, WORKER, result)
    return draft


async def _critic_turn(
    ctx: RunContext, client: OpenAIChatCompletionClient, delivered: str, round_: int
) -> str:
    messages = ctx.reviewer_prompt(delivered, round_)
    critic = AssistantAgent(CRITIC, client, system_message=messages.system)
    result, reply = await _one_turn(ctx, critic, CRITIC_STOP_TEXT, messages.user)
    ctx.trace.emit("review", CRITIC, reply, round=round_)
    _record_stop_reason(ctx, CRITIC, result)
    return reply


async def _run_default(ctx: RunContext) -> None:
    worker_client = _model_client(ctx, WORKER)
    critic_client = _model_client(ctx, "reviewer")
    try:
        feedback = ""
        delivered = ""
        for round_ in (0, 1):
            draft = await _worker_turn(ctx, worker_client, round_, feedback)
            delivered = ctx.handoff(WORKER, "reviewer", draft)
            reply = await _critic_turn(ctx, critic_client, delivered, round_)
            verdict = parse_verdict(reply)
            if round_ == 0 and verdict is not None and verdict[0] == "reject":
                reason, feedback = verdict[1], rejection_text(reply)
                ctx.trace.emit("retry", WORKER, reason, source="revise", reason=reason,
                               feedback=feedback)
                continue
            break
        ctx.emit(delivered)
    finally:
        await _close(worker_client, critic_client)


# --------------------------------------------------------------------------- Magentic-One


class _MagenticObserver:
    """Follows one Magentic-One team run: the trace-logger records and the public message
    stream, each written to the trace as it arrives."""

    def __init__(self, ctx: RunContext, task: str) -> None:
        self.ctx = ctx
        self.task = task
        self.replans_logged = 0  # trace-logger re-plan records (the mandated surface)
        self.ledgers_seen = 0  # task ledgers the orchestrator issued on the message stream
        self.tool_requests = 0  # the worker's tool-using model calls in its current turn

    def on_record(self, record: OrchestratorRecord) -> None:
        self.ctx.sync_model_calls()  # the ledger call itself comes first
        if isinstance(record, LedgerRecord):
            self.ctx.trace.emit("ledger", "orchestrator", record.line, ledger=record.ledger)
        elif isinstance(record, ReplanRecord):
            self.replans_logged += 1
            self.ctx.trace.emit(
                "replan", "orchestrator", record.reason, reason=record.reason, log_line=record.line
            )

    def on_message(self, item: BaseAgentEvent | BaseChatMessage) -> None:
        if isinstance(item, ToolCallRequestEvent) and item.source == WORKER:
            self.tool_requests += 1
            return
        if not isinstance(item, TextMessage) or item.source not in (WORKER, ORCHESTRATOR):
            return
        self.ctx.sync_model_calls()
        if item.source == WORKER:
            if self.tool_requests >= WORKER_TOOL_ITERATIONS:
                _record_worker_cap(self.ctx, 0)
            self.tool_requests = 0
            component = WORKER
        else:
            # Re-entering the outer loop re-issues the task ledger, which carries the
            # team's whole task; the first one is the initial plan.
            if self.task and self.task in item.content:
                self.ledgers_seen += 1
            component = "orchestrator"
        self.ctx.trace.emit("agent_output", component, item.content, stage=component, round=0)

    def record_surface_check(self) -> None:
        streamed = max(self.ledgers_seen - 1, 0)
        self.ctx.trace.emit(
            "surface_check",
            "orchestrator",
            surface="replan",
            mandated="trace_logger",
            mandated_count=self.replans_logged,
            other="message_stream",
            other_count=streamed,
            agree=streamed == self.replans_logged,
        )


async def _run_guardrail(ctx: RunContext) -> None:
    handles = ctx.tools
    roles = {h.name: tool_role(h) for h in handles}
    data_tools = [HarnessTool(h, ctx.sync_model_calls) for h in handles if roles[h.name] == "data"]
    seams = {role: [h for h in handles if roles[h.name] == role] for role in ("check", "write")}

    worker_client = _model_client(ctx, WORKER)
    orchestrator_client = _model_client(ctx, "orchestrator")
    try:
        worker = AssistantAgent(
            WORKER,
            worker_client,
            tools=list(data_tools),
            description=MAGENTIC_WORKER_DESCRIPTION,
            system_message=MAGENTIC_WORKER_SYSTEM,
            reflect_on_tool_use=True,
            max_tool_iterations=WORKER_TOOL_ITERATIONS,
        )
        team = MagenticOneGroupChat(
            [worker], model_client=orchestrator_client, max_stalls=MAX_STALLS
        )
        task = ctx.magentic_task()
        observer = _MagenticObserver(ctx, task)
        with TraceLoggerCapture(observer.on_record):
            result = await _run_team(team, task, observer.on_message)
        ctx.sync_model_calls()
        observer.record_surface_check()
        if result.stop_reason == MAX_ROUNDS_REACHED:
            ctx.trace.emit(
                "cap",
                "orchestrator",
                cap="team_turns",
                limit=MAX_TURNS,
                setting="max_turns",
                ending="forced_final_answer",
            )
        _record_stop_reason(ctx, "orchestrator", result)
    finally:
        await _close(worker_client, orchestrator_client)

    final = _last_text(result.messages, ORCHESTRATOR)
    if final is None:
        raise RuntimeError(f"Magentic-One gave no final answer (stop: {result.stop_reason!r})")
    # Post-run seams (the section 10.6 carve-out): nothing in the team sees what follows.
    delivered = ctx.handoff("orchestrator", "emitter", final)
    # The check and write tools get the artifact proper: the FLAGS head line (the output
    # contract's line 1 in waves 2+) is not part of what is checked and committed.
    body = strip_flags_head(delivered)[1] if ctx.flags_protocol else delivered
    for role in ("check", "write"):
        for handle in seams[role]:
            handle.invoke(arguments_for_artifact(handle, body))
    ctx.sync_model_calls()
    ctx.emit(delivered)


# --------------------------------------------------------------------------- entry point


async def _close(*clients: OpenAIChatCompletionClient) -> None:
    for client in clients:
        await client.close()


def _in_fresh_loop(make: Awaitable[_T]) -> _T:
    return in_fresh_loop(make, "sabot-autogen-run")


def run(ctx: RunContext) -> None:
    """Build and run one AutoGen pipeline for ``ctx.cell`` (default or guardrail config)."""
    _silence_ledger_dump_warning()
    if ctx.cell.config == "guardrail":
        _in_fresh_loop(_run_guardrail(ctx))
    else:
        _in_fresh_loop(_run_default(ctx))
