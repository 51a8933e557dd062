"""The Microsoft agent-framework pipeline (agent-framework-core 1.23.0,
agent-framework-openai 1.17.0, agent-framework-orchestrations 1.4.0): a candidate row.

Both configs are built from agent-framework's own primitives and driven only through the
harness contract of :mod:`pytest_sabot.core.context`. Every agent is an
``agent_framework.Agent`` on agent-framework-openai's ``OpenAIChatCompletionClient``, whose
``AsyncOpenAI`` client points at the gateway URL of its role (``ctx.base_url(agent)``),
never retries (``max_retries=0``: the gateway is the only retry layer) and ignores proxy and
``OPENAI_*``/``AZURE_*`` environment variables (the client is passed in ready-made). No
temperature is sent (section 8): no agent sets chat options.

Tools are ``FunctionTool`` objects whose body is the harness's ``ToolHandle.invoke`` (each
call pulls the gateway's exchanges into the trace first, so the model call that asked for a
tool precedes the tool call). A worker's chat client has
``function_invocation_configuration={"max_iterations": WORKER_MODEL_CALL_CAP}``: after that
many tool-using model calls agent-framework makes one more call with ``tool_choice="none"``
whose reply is the draft (its own "Requesting final response without tools"), which is
SPEC.md I33's ending; the adapter counts the pass's tool-calling replies and writes a
``cap`` event when they reached the limit.

Default config (load -> worker -> review -> revise | emit)
    One ``Workflow`` per run built with ``WorkflowBuilder`` from five executors::

        load -> worker -> review -+-> revise -> worker -> review -> ...
                                  +-> emit

    ``load`` reads the worker's first-pass prompt (the O5 seam is behind it); ``worker``
    runs the worker agent and hands its draft through ``ctx.handoff("worker", "reviewer",
    ...)`` (the O3 seam); ``review`` runs the reviewer agent on ``ctx.reviewer_prompt``
    (verdict-token protocol, and the FLAGS addendum when the wave has it) and routes through
    a switch-case edge group: a ``VERDICT: REJECT`` while the one revise pass is unused goes
    to ``revise`` (a ``retry`` event, source ``revise``, with the reject reason), anything
    else to ``emit`` (``ctx.emit`` with the delivered draft). Each agent run is stateless
    (a fresh session per pass).

Guardrail config (Magentic)
    ``MagenticBuilder(participants=[worker], manager_agent=<orchestrator agent>,
    max_stall_count=3, max_round_count=20)`` on ``ctx.magentic_task()`` (whose output
    contract carries the FLAGS head line in waves 2+). The worker holds the task's data tool
    only; there is no reviewer stage: the orchestrator's progress ledger is the review
    mechanism. Read from the workflow's own event stream (``run(stream=True)``): each
    ``PROGRESS_LEDGER_UPDATED`` becomes a ``ledger`` event, each ``REPLANNED`` a ``replan``
    event whose reason is the stall ledgers' recorded no-progress / in-loop reasons and
    whose ``log_line`` is the line the orchestrator logged before it (``Magentic
    Orchestrator: Stalling detected after N rounds`` for a stall re-plan, the failed-ledger
    warning otherwise); the task ledgers and every worker turn become ``agent_output``
    events. After the run one ``surface_check`` event sets the stall re-plans the logged
    lines show beside those the published ledgers account for (SPEC.md I35's habit).

    ``max_stall_count`` is the standard's Magentic pin (and the framework's default).
    ``max_round_count`` has no default in the framework (unbounded); it is set to the
    standard's Magentic-One round limit, 20, so a team that never satisfies its ledger ends
    instead of running into the harness timeout. Reaching it, the framework publishes its
    termination message instead of a final answer: a ``cap`` event (team_turns, ending
    ``stopped``), the message verbatim as ``stop_reason``, and ``run_end`` task_failed with
    no artifact. The cap is this project's knob, so the mapping counts no act for it
    (SPEC.md I31, I62).

    Structural carve-out (SPEC.md S10.6, I61): as in the Magentic-One row, the check and
    write tools run after the team has finished: the final answer crosses
    ``ctx.handoff("orchestrator", "emitter", ...)`` and the harness side of the pipeline
    calls the check and write tools on it through their ToolHandles before ``ctx.emit``. O2,
    O3 and O6 therefore land where no component executes with them in view.

A failed model call of the orchestrator is not a ledger (SPEC.md I38): agent-framework
would turn it into a reset and a re-plan; an agent middleware on the orchestrator agent sees
the failure and the run ends as a run error naming it.

Every run gets a fresh event loop (on a thread of its own when one is already running).

Trace events written here (every other event comes from the harness):

========================  ============  ==============================================
kind                      component     when
========================  ============  ==============================================
agent_output              worker        each worker draft (stage worker / revise)
cap (worker_model_calls)  worker        a pass's every allowed call asked for tools
review                    reviewer      each reviewer reply, full text (default)
retry (source revise)     worker        the worker is re-invoked with the reject reason
agent_output              orchestrator  task ledgers (stage plan / replan), final answer
ledger                    orchestrator  each published progress ledger (guardrail)
replan                    orchestrator  each published re-plan (guardrail)
surface_check             orchestrator  once after the team run (guardrail)
cap (team_turns)          orchestrator  the round limit was reached (guardrail)
stop_reason               orchestrator  the framework's termination message (guardrail)
run_end (task_failed)     pipeline      the team ended without a final answer
========================  ============  ==============================================
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Never, TypeVar

from agent_framework import (
    Agent,
    AgentContext,
    AgentExecutorResponse,
    AgentMiddleware,
    AgentResponse,
    Case,
    Default,
    Executor,
    FunctionInvocationConfiguration,
    FunctionTool,
    Message,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)
from agent_framework_openai import OpenAIChatCompletionClient
from agent_framework_orchestrations import (
    MagenticBuilder,
    MagenticOrchestrator,
    MagenticOrchestratorEvent,
    MagenticOrchestratorEventType,
)
from openai import AsyncOpenAI

from pytest_sabot.adapters.agent_framework._magentic import MagenticLogCapture, StallFollower
from pytest_sabot.core.context import WORKER_MODEL_CALL_CAP, RunContext, ToolHandle
from pytest_sabot.core.loops import in_fresh_loop
from pytest_sabot.core.verdict_token import rejection_text, routing_verdict, strip_flags_head

__all__ = [
    "MAX_ROUND_COUNT",
    "MAX_STALL_COUNT",
    "ORCHESTRATOR",
    "ROUND_LIMIT_TEXT",
    "TERMINATION_TEXTS",
    "WORKER_MAX_ITERATIONS",
    "build_default_workflow",
    "run",
]

MAX_STALL_COUNT = 3
"""Magentic stall limit (the standard's max_stalls=3; agent-framework's default is 3 too)."""
MAX_ROUND_COUNT = 20
"""Magentic round limit: the standard's Magentic-One value; agent-framework has none by
default (SPEC.md S8.12, I62). Reaching it is a cap, never an act."""
WORKER_MAX_ITERATIONS = WORKER_MODEL_CALL_CAP
"""``max_iterations`` of a worker's function invocation loop (SPEC.md S8.12, I33)."""
ROUND_LIMIT_TEXT = "Workflow terminated due to reaching maximum round count."
"""What agent-framework-orchestrations 1.4.0 yields instead of a final answer at the limit."""
TERMINATION_TEXTS = (ROUND_LIMIT_TEXT, "Workflow terminated due to reaching maximum reset count.")
ORCHESTRATOR: str = MagenticOrchestrator.MANAGER_NAME
"""The executor id agent-framework gives the Magentic orchestrator ('magentic_orchestrator')."""

WORKER = "worker"
REVIEWER = "reviewer"

MAGENTIC_WORKER_DESCRIPTION = (
    "Worker: reads the task's materials, looks data up with its tool and writes the "
    "requested content."
)
# The Magentic worker's own instructions. The task itself (materials, contract) reaches it
# only through the orchestrator's instructions; ctx.worker_prompt is not used in this config.
MAGENTIC_WORKER_SYSTEM = (
    "You are the worker of this team. Carry out the orchestrator's instructions for the "
    "task: read the materials given there, look data up with your tool when needed, and "
    "answer with exactly the content the task's output contract asks for."
)

_T = TypeVar("_T")


# --------------------------------------------------------------------------- parts


def _chat_client(
    ctx: RunContext, agent: str, http: Any, *, worker: bool
) -> OpenAIChatCompletionClient:
    """agent-framework-openai's Chat Completions client on the gateway URL of ``agent``."""
    openai_client = AsyncOpenAI(
        base_url=ctx.base_url(agent), api_key=ctx.api_key, max_retries=0, http_client=http
    )
    configuration: FunctionInvocationConfiguration = (
        {"max_iterations": WORKER_MAX_ITERATIONS} if worker else {}
    )
    return OpenAIChatCompletionClient(
        model=ctx.model_name,
        async_client=openai_client,
        function_invocation_configuration=configuration,
    )


def _function_tool(ctx: RunContext, handle: ToolHandle) -> FunctionTool:
    """A FunctionTool whose every call goes through the harness's ToolHandle."""

    def call(**arguments: Any) -> str:
        ctx.sync_model_calls()  # the model call that asked for the tool comes first
        return handle.invoke(arguments)

    return FunctionTool(
        name=handle.name,
        description=handle.description,
        func=call,
        input_model=dict(handle.parameters),
    )


def _reply(response: AgentResponse) -> tuple[str, int]:
    """The draft of one agent pass (its last assistant text) and how many of its model
    calls asked for tools."""
    asked = 0
    draft = ""
    for message in response.messages:
        if message.role != "assistant":
            continue
        if any(c.type == "function_call" for c in message.contents):
            asked += 1
        text = message.text
        if text:
            draft = text
    return draft, asked


def _record_worker_pass(ctx: RunContext, response: AgentResponse, stage: str, round_: int) -> str:
    ctx.sync_model_calls()
    draft, asked = _reply(response)
    if asked >= WORKER_MAX_ITERATIONS:
        # Every allowed call asked for tools: agent-framework made one more call with
        # tool_choice "none", and its reply is the draft (SPEC.md I33).
        ctx.trace.emit(
            "cap",
            WORKER,
            cap="worker_model_calls",
            limit=WORKER_MAX_ITERATIONS,
            setting="max_iterations",
            ending="forced_final_answer",
            round=round_,
        )
    ctx.trace.emit("agent_output", WORKER, draft, stage=stage, round=round_)
    return draft


# --------------------------------------------------------------------------- default config


@dataclass(frozen=True)
class _Start:
    """The workflow's input: start the run."""


@dataclass(frozen=True)
class _WorkerPass:
    round: int
    system: str
    user: str


@dataclass(frozen=True)
class _Draft:
    round: int
    delivered: str


@dataclass(frozen=True)
class _Rejected:
    round: int
    reason: str  # the verdict-token parse of the reply, recorded on the retry
    feedback: str  # the rejection text the revise pass hands the worker


@dataclass(frozen=True)
class _Approved:
    delivered: str


class _Step(Executor):
    """One executor of the default workflow, with the run's context."""

    def __init__(self, ctx: RunContext, id: str) -> None:
        super().__init__(id=id)
        self._ctx = ctx


class _AgentStep(_Step):
    """A step that asks one agent, in a fresh session, with a system and a user message."""

    def __init__(self, ctx: RunContext, id: str, agent: Agent) -> None:
        super().__init__(ctx, id)
        self._agent = agent

    async def _ask(self, system: str, user: str) -> AgentResponse:
        return await self._agent.run(
            [
                Message(role="system", contents=[system]),
                Message(role="user", contents=[user]),
            ],
            session=self._agent.create_session(),
        )


class _Load(_Step):
    @handler
    async def load(self, start: _Start, wctx: WorkflowContext[_WorkerPass]) -> None:
        # The task materials are read for the worker's first pass here (the harness's
        # context-loader seam sits behind worker_prompt).
        prompt = self._ctx.worker_prompt(round=0)
        await wctx.send_message(_WorkerPass(0, prompt.system, prompt.user))


class _Worker(_AgentStep):
    @handler
    async def work(self, task: _WorkerPass, wctx: WorkflowContext[_Draft]) -> None:
        response = await self._ask(task.system, task.user)
        stage = "worker" if task.round == 0 else "revise"
        draft = _record_worker_pass(self._ctx, response, stage, task.round)
        delivered = self._ctx.handoff(WORKER, REVIEWER, draft)
        await wctx.send_message(_Draft(task.round, delivered))


class _Review(_AgentStep):
    @handler
    async def review(self, draft: _Draft, wctx: WorkflowContext[_Rejected | _Approved]) -> None:
        prompt = self._ctx.reviewer_prompt(draft.delivered, draft.round)
        response = await self._ask(prompt.system, prompt.user)
        self._ctx.sync_model_calls()
        text, _ = _reply(response)
        self._ctx.trace.emit("review", REVIEWER, text, round=draft.round)
        verdict = routing_verdict(text)
        if verdict.decision == "reject" and draft.round == 0:
            await wctx.send_message(_Rejected(draft.round, verdict.reason, rejection_text(text)))
        else:
            await wctx.send_message(_Approved(draft.delivered))


class _Revise(_Step):
    @handler
    async def revise(self, rejected: _Rejected, wctx: WorkflowContext[_WorkerPass]) -> None:
        reason = rejected.reason
        self._ctx.trace.emit("retry", WORKER, reason, source="revise", reason=reason,
                             feedback=rejected.feedback)
        round_ = rejected.round + 1
        prompt = self._ctx.worker_prompt(round=round_, feedback=rejected.feedback)
        await wctx.send_message(_WorkerPass(round_, prompt.system, prompt.user))


class _Emit(_Step):
    @handler
    async def emit(self, approved: _Approved, wctx: WorkflowContext[Never, str]) -> None:
        self._ctx.emit(approved.delivered)
        await wctx.yield_output(approved.delivered)


def build_default_workflow(ctx: RunContext, worker: Agent, reviewer: Agent) -> Any:
    """The default config's workflow: load -> worker -> review -> revise | emit."""
    load = _Load(ctx, "load")
    work = _Worker(ctx, WORKER, worker)
    review = _Review(ctx, "review", reviewer)
    revise = _Revise(ctx, "revise")
    emit = _Emit(ctx, "emit")
    return (
        WorkflowBuilder(start_executor=load, name="sabot-default")
        .add_edge(load, work)
        .add_edge(work, review)
        .add_switch_case_edge_group(
            review,
            [
                Case(condition=lambda m: isinstance(m, _Rejected), target=revise),
                Default(target=emit),
            ],
        )
        .add_edge(revise, work)
        .build()
    )


async def _run_default(ctx: RunContext) -> None:
    http = ctx.http_async_client()
    try:
        worker = Agent(
            _chat_client(ctx, WORKER, http, worker=True),
            name=WORKER,
            tools=[_function_tool(ctx, h) for h in ctx.tools],
        )
        reviewer = Agent(_chat_client(ctx, REVIEWER, http, worker=False), name=REVIEWER)
        workflow = build_default_workflow(ctx, worker, reviewer)
        result = await workflow.run(_Start())
        ctx.sync_model_calls()
        if not result.get_outputs():
            state = result.get_final_state()
            raise RuntimeError(f"the agent-framework workflow ended without emitting ({state})")
    finally:
        await http.aclose()


# --------------------------------------------------------------------------- Magentic


class _FailedCallGuard(AgentMiddleware):
    """Sees the orchestrator's model calls fail (SPEC.md I38): agent-framework would turn a
    failed progress-ledger call into a reset and a re-plan, so the failure is kept here and
    the run ends on it as a run error."""

    def __init__(self) -> None:
        self.failure: BaseException | None = None

    async def process(
        self, context: AgentContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        try:
            await call_next()
        except Exception as exc:
            if self.failure is None:
                self.failure = exc
            raise


class _MagenticObserver:
    """Follows one Magentic team run through its event stream and writes it to the trace."""

    def __init__(
        self, ctx: RunContext, capture: MagenticLogCapture, guard: _FailedCallGuard
    ) -> None:
        self.ctx = ctx
        self.capture = capture
        self.guard = guard
        self.follower = StallFollower(MAX_STALL_COUNT)
        self.replans = 0
        self.output: list[str] = []
        self.last_ledger: dict[str, Any] | None = None

    def check_guard(self) -> None:
        if self.guard.failure is not None:
            raise RuntimeError(
                "a model call of the Magentic orchestrator failed, so its ledger gave no "
                f"verdict: {type(self.guard.failure).__name__}: {self.guard.failure}"
            )

    def on_event(self, event: Any) -> None:
        self.check_guard()
        kind = event.type
        if kind == "magentic_orchestrator" and isinstance(event.data, MagenticOrchestratorEvent):
            self._on_orchestrator(event.data)
        elif kind == "executor_completed" and event.executor_id == WORKER:
            for item in event.data or ():
                if isinstance(item, AgentExecutorResponse):
                    _record_worker_pass(self.ctx, item.agent_response, WORKER, 0)
        elif kind == "output" and event.executor_id == ORCHESTRATOR:
            self.output.append(_update_text(event.data))

    def _on_orchestrator(self, data: MagenticOrchestratorEvent) -> None:
        self.ctx.sync_model_calls()  # the manager's calls come before what they produced
        trace = self.ctx.trace
        if data.event_type == MagenticOrchestratorEventType.PROGRESS_LEDGER_UPDATED:
            ledger = data.content.to_dict()
            self.last_ledger = ledger
            self.follower.feed(ledger)
            text = json.dumps(ledger, ensure_ascii=False)
            trace.emit("ledger", "orchestrator", text, ledger=ledger)
        elif data.event_type == MagenticOrchestratorEventType.REPLANNED:
            self.replans += 1
            reason, _ = self.follower.replanned()
            line = self.capture.take_replan_line()
            trace.emit("replan", "orchestrator", reason, reason=reason, log_line=line)
            ledger_text = _message_text(data.content)
            trace.emit("agent_output", "orchestrator", ledger_text, stage="replan", round=0)
        elif data.event_type == MagenticOrchestratorEventType.PLAN_CREATED:
            ledger_text = _message_text(data.content)
            trace.emit("agent_output", "orchestrator", ledger_text, stage="plan", round=0)

    def ended_on_a_settled_ledger(self) -> bool:
        """The last published ledger is satisfied, or names no participant: the two ways
        agent-framework 1.4.0 goes on to prepare a final answer."""
        ledger = self.last_ledger or {}
        satisfied = (ledger.get("is_request_satisfied") or {}).get("answer")
        speaker = (ledger.get("next_speaker") or {}).get("answer")
        return satisfied is True or speaker != WORKER

    def record_surface_check(self) -> None:
        logged = self.capture.stall_lines
        published = self.follower.stall_replans
        self.ctx.trace.emit(
            "surface_check",
            "orchestrator",
            surface="replan",
            mandated="logged_stall_line",
            mandated_count=logged,
            other="published_ledgers",
            other_count=published,
            agree=logged == published,
        )


def _message_text(content: Any) -> str:
    return str(getattr(content, "text", "") or "")


def _update_text(data: Any) -> str:
    if isinstance(data, AgentResponse):
        return data.text
    return str(getattr(data, "text", "") or "")


async def _run_guardrail(ctx: RunContext) -> None:
    handles = ctx.tools
    data_tools = [_function_tool(ctx, h) for h in handles if h.role == "data"]
    post_run = [h for role in ("check", "write") for h in handles if h.role == role]
    for handle in post_run:
        if handle.artifact_arguments is None:
            raise ValueError(
                f"tool {handle.name!r}: the Magentic config applies check and write tools to "
                "the final answer itself and needs ToolHandle.artifact_arguments"
            )
    http = ctx.http_async_client()
    guard = _FailedCallGuard()
    try:
        worker = Agent(
            _chat_client(ctx, WORKER, http, worker=True),
            MAGENTIC_WORKER_SYSTEM,
            name=WORKER,
            description=MAGENTIC_WORKER_DESCRIPTION,
            tools=data_tools,
        )
        manager = Agent(
            _chat_client(ctx, "orchestrator", http, worker=False),
            name="orchestrator",
            middleware=[guard],
        )
        workflow = MagenticBuilder(
            participants=[worker],
            manager_agent=manager,
            max_stall_count=MAX_STALL_COUNT,
            max_round_count=MAX_ROUND_COUNT,
        ).build()
        task = ctx.magentic_task()
        with MagenticLogCapture() as capture:
            observer = _MagenticObserver(ctx, capture, guard)
            async for event in workflow.run(task, stream=True):
                observer.on_event(event)
        observer.check_guard()
        ctx.sync_model_calls()
        observer.record_surface_check()
    finally:
        await http.aclose()

    final = "".join(observer.output)
    if final in TERMINATION_TEXTS:
        # The framework stopped the team at a limit and yielded this message instead of a
        # final answer: the artifact is withheld and the task fails (SPEC.md I62).
        if final == ROUND_LIMIT_TEXT:
            ctx.trace.emit(
                "cap",
                "orchestrator",
                cap="team_turns",
                limit=MAX_ROUND_COUNT,
                setting="max_round_count",
                ending="stopped",
            )
        ctx.trace.emit("stop_reason", "orchestrator", final)
        ctx.trace.emit("run_end", "pipeline", final, status="task_failed", detail=final)
        return
    if not final:
        raise RuntimeError("the Magentic team ended without a final answer")
    if not observer.ended_on_a_settled_ledger():
        # Only a limit ends the team after an unsettled ledger; an output that is not the
        # framework's termination message means a release changed it: fail loudly rather
        # than emit that message as the task's artifact.
        raise RuntimeError(
            f"the Magentic team ended after an unsettled progress ledger with {final[:200]!r}, "
            f"which is not a termination message this adapter knows ({TERMINATION_TEXTS})"
        )
    ctx.trace.emit("agent_output", "orchestrator", final, stage="final", round=0)
    # Post-run seams (the section 10.6 carve-out): nothing in the team sees what follows.
    delivered = ctx.handoff("orchestrator", "emitter", final)
    # The check and write tools get the artifact proper: the FLAGS head line (the output
    # contract's line 1 in waves 2+) is not part of what is checked and committed.
    body = strip_flags_head(delivered)[1] if ctx.flags_protocol else delivered
    for handle in post_run:
        assert handle.artifact_arguments is not None
        handle.invoke(handle.artifact_arguments(body))
    ctx.sync_model_calls()
    ctx.emit(delivered)


# --------------------------------------------------------------------------- entry point


def _in_fresh_loop(make: Awaitable[_T]) -> _T:
    return in_fresh_loop(make, "sabot-agent-framework-run")


def run(ctx: RunContext) -> None:
    """Build and run one agent-framework pipeline for ``ctx.cell`` (default or guardrail)."""
    if ctx.cell.config == "guardrail":
        _in_fresh_loop(_run_guardrail(ctx))
    else:
        _in_fresh_loop(_run_default(ctx))
