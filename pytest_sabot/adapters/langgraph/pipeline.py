"""The LangGraph pipeline (langgraph 1.2.9, langchain-openai 1.4.0), standard sections 5 and 8.

One ``StateGraph`` per config, compiled once per process (``compiled_graph``) and invoked by
every run of that config; the run's own parts (context, tools, model clients) reach the
nodes through the invoke's ``configurable``, never through the graph::

    load -> worker -> review -> revise -> review -> ...      (one revise pass at most)
                        |
                        +-> emit                             default config
                        +-> validate -> emit | revise        guardrail config

Both agents are ``ChatOpenAI`` clients pointed at the run's gateway URL. No temperature is
sent (section 8) and the client never retries (the gateway is the only retry layer).

The worker is a tool-calling loop: its model is bound to the task's tools, converted to
LangChain ``StructuredTool`` objects whose body is the harness's ``ToolHandle.invoke``, so
every call is recorded by the harness and passes through its operator seams. A pass that
asks for tools on all of its ``MAX_WORKER_MODEL_CALLS`` calls ends with one more call that
offers no tools, whose reply is the draft — the way CrewAI's ``max_iter`` and AutoGen's
``max_tool_iterations`` end a capped worker (SPEC.md I33).

The reviewer's reply is recorded verbatim as a ``review`` event; its verdict token is parsed
here only to route (REJECT with the reviewer's revise pass unused -> revise; otherwise
onward). The guardrail config adds a deterministic ``validate`` node in front of ``emit``
that checks only the published output contract (the fairness rule). Its count is its own
(section 8: "first failure routes Command(goto="revise"), a second calls interrupt()";
SPEC.md I32): the validator's first failure routes ``Command(goto="revise")`` whether or not
the reviewer has already spent its revise pass, and its second failure calls
``langgraph.types.interrupt(reason)``, which this module observes through the
``__interrupt__`` key of the ``.invoke()`` result and records as an escalation that ends the
run with the task failed. Each check counts only its own: a reviewer REJECT sends the
worker back once whether or not the validator already did, and the other way round. So a
run has at most two revise passes (rounds 1 and 2), one per check. In
the guardrail config every path to ``emit`` passes ``validate``, including a reviewer REJECT
that has no revise pass left.

Trace events written here (every other event comes from the harness):

========================  ===========  ==================================================
kind                      component    when
========================  ===========  ==================================================
agent_output              worker       each worker reply (stage ``worker`` or ``revise``)
cap (worker_model_calls)  worker       a pass's every allowed call asked for tools; the
                                       call after it offered none and gave the draft
review                    reviewer     each reviewer reply, full text
retry (source revise)     worker       the worker is re-invoked carrying a reason
guardrail (contract)      validator    each validate pass, success or failure
route (goto revise)       validator    the validator's Command(goto="revise")
interrupt                 validator    ``__interrupt__`` seen in the invoke result
run_end (task_failed)     pipeline     the run ends on that interrupt
========================  ===========  ==================================================
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from pytest_sabot.core.context import (
    WORKER_MODEL_CALL_CAP,
    Messages,
    RunContext,
    ToolHandle,
)
from pytest_sabot.core.verdict_token import (
    VERDICT_PATTERN,
    Verdict,
    rejection_text,
    routing_verdict,
)

if TYPE_CHECKING:
    import httpx
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool
    from langchain_openai import ChatOpenAI

__all__ = [
    "INVOKE_VERSION",
    "MAX_WORKER_MODEL_CALLS",
    "RECURSION_LIMIT",
    "VERDICT_PATTERN",
    "Verdict",
    "compiled_graph",
    "parse_verdict",
    "run",
]


# A worker pass may ask for tools on at most this many model calls; if every one of them
# did, one more call without tools gives the draft (core/context.py, SPEC.md I33).
MAX_WORKER_MODEL_CALLS = WORKER_MODEL_CALL_CAP
# The invoke() output format this module reads interrupts from: "v1" returns the state dict
# with an "__interrupt__" key (section 5: "observed via the __interrupt__ key in the
# .invoke() result"). Passed explicitly so a change of LangGraph's default cannot make an
# escalation vanish; anything but that dict fails the run loudly.
INVOKE_VERSION: Literal["v1"] = "v1"
# The longest legal path is load, worker, review, revise, review, validate, revise, review,
# validate, emit (10 steps); the limit is never reached on a legal path and stops an
# accidental cycle after 20 steps instead of LangGraph's default 10007 (SPEC.md S8.12).
RECURSION_LIMIT = 20

Route = Literal["revise", "emit", "validate"]


# Standard section 5, verdict-token protocol: one shared parser (case-insensitive, first
# match) for routing here and for adjudication in the scorer.
parse_verdict = routing_verdict


class PipelineState(TypedDict, total=False):
    """The graph state: the current draft and the routing bookkeeping."""

    round: int  # 0 for the first pass, then 1 (and 2) for each revise pass that ran
    system: str  # the worker's first-pass messages, as the load node read them
    user: str
    draft: str  # the worker's reply as written
    delivered: str  # the draft as the reviewer received it (after the handoff channel)
    review: str  # the reviewer's full reply
    feedback: str  # what the worker is re-invoked with (the rejection text, the failures)
    reason: str  # the re-invocation's recorded reason (the verdict-token parse, the failures)
    revised: bool  # the reviewer's one revise pass has been used
    contract_failures: int  # validate passes that failed so far (guardrail config)
    next: Route  # where the review node routes


def _chat_model(ctx: RunContext, agent: str, async_http: httpx.AsyncClient) -> ChatOpenAI:
    """A ChatOpenAI client on the run's HTTP clients: left to itself, ChatOpenAI builds (and
    caches per base URL, so per run) a fresh pair of httpx clients, loading the system CA
    bundle for each. The graph is invoked synchronously; the async client is there because
    ChatOpenAI builds its async side too."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=ctx.model_name,
        base_url=ctx.base_url(agent),
        api_key=ctx.api_key,
        max_retries=0,
        # The gateway speaks Chat Completions; never let a model name switch the client to
        # the Responses API.
        use_responses_api=False,
        http_client=ctx.http_client(),
        http_async_client=async_http,
    )


def _as_langchain_tool(handle: ToolHandle) -> BaseTool:
    from langchain_core.tools import StructuredTool

    def call(**arguments: Any) -> str:
        return handle.invoke(arguments)

    return StructuredTool(
        name=handle.name,
        description=handle.description,
        args_schema=handle.parameters,
        func=call,
    )


def _reply_text(message: BaseMessage) -> str:
    return message.text


class _Pipeline:
    """What the graph's nodes do for one run, closed over the run context and the two
    clients; handed to the shared compiled graph in each invoke's ``configurable``."""

    def __init__(self, ctx: RunContext, async_http: httpx.AsyncClient) -> None:
        self.ctx = ctx
        self.tools = [_as_langchain_tool(h) for h in ctx.tools]
        self.tools_by_name = {t.name: t for t in self.tools}
        worker = _chat_model(ctx, "worker", async_http)
        self.plain_worker_model = worker  # no tools offered: the capped pass's last call
        self.worker_model = worker.bind_tools(self.tools) if self.tools else worker
        self.reviewer_model = _chat_model(ctx, "reviewer", async_http)

    # ------------------------------------------------------------------ helpers

    def _ask(self, model: Any, messages: list[BaseMessage]) -> Any:
        reply = model.invoke(messages)
        # Pull the exchange into the trace before anything derived from it is recorded, so
        # a model-seam injection precedes the events it can influence.
        self.ctx.sync_model_calls()
        return reply

    def _work(self, prompt: Messages, round_: int, stage: str) -> str:
        from langchain_core.messages import HumanMessage, SystemMessage

        messages: list[BaseMessage] = [
            SystemMessage(content=prompt.system),
            HumanMessage(content=prompt.user),
        ]
        reply: Any = None
        for _ in range(MAX_WORKER_MODEL_CALLS):
            reply = self._ask(self.worker_model, messages)
            messages.append(reply)
            if not reply.tool_calls and not reply.invalid_tool_calls:
                break
            self._run_tools(reply, messages)
        else:
            # Every allowed call asked for tools: the pass ends as CrewAI's max_iter and
            # AutoGen's max_tool_iterations end it, with one more call offering no tools.
            reply = self._ask(self.plain_worker_model, messages)
            messages.append(reply)
            self.ctx.trace.emit(
                "cap",
                "worker",
                cap="worker_model_calls",
                limit=MAX_WORKER_MODEL_CALLS,
                setting="MAX_WORKER_MODEL_CALLS",
                ending="forced_final_answer",
                round=round_,
            )
        text = _reply_text(reply) if reply is not None else ""
        self.ctx.trace.emit("agent_output", "worker", text, stage=stage, round=round_)
        return text

    def _run_tools(self, reply: Any, messages: list[BaseMessage]) -> None:
        """Run the tool calls of one reply and append their observations."""
        from langchain_core.messages import ToolMessage

        for call in reply.tool_calls:
            tool = self.tools_by_name.get(call["name"])
            if tool is None:
                messages.append(
                    ToolMessage(
                        content=f"Error: there is no tool named {call['name']!r}.",
                        tool_call_id=call["id"] or "",
                        status="error",
                    )
                )
            else:
                messages.append(tool.invoke(call))
        for bad in reply.invalid_tool_calls:
            messages.append(
                ToolMessage(
                    content=f"Error: the arguments of {bad['name']!r} were not valid JSON.",
                    tool_call_id=bad["id"] or "",
                    status="error",
                )
            )

    def _deliver(self, draft: str) -> str:
        return self.ctx.handoff("worker", "reviewer", draft)

    # ------------------------------------------------------------------ nodes

    def load(self, state: PipelineState) -> PipelineState:
        # The task materials are read for the worker's first pass here (the harness's
        # context-loader seam sits behind worker_prompt).
        prompt = self.ctx.worker_prompt(0, "")
        return {
            "round": 0,
            "revised": False,
            "feedback": "",
            "reason": "",
            "contract_failures": 0,
            "system": prompt.system,
            "user": prompt.user,
        }

    def worker(self, state: PipelineState) -> PipelineState:
        prompt = Messages(system=state.get("system", ""), user=state.get("user", ""))
        draft = self._work(prompt, 0, "worker")
        return {"draft": draft, "delivered": self._deliver(draft)}

    def revise(self, state: PipelineState) -> PipelineState:
        reason, feedback = state.get("reason", ""), state.get("feedback", "")
        round_ = state.get("round", 0) + 1
        self.ctx.trace.emit("retry", "worker", reason, source="revise", reason=reason,
                            feedback=feedback)
        draft = self._work(self.ctx.worker_prompt(round_, feedback), round_, "revise")
        return {"round": round_, "draft": draft, "delivered": self._deliver(draft)}

    def review(self, state: PipelineState) -> PipelineState:
        from langchain_core.messages import HumanMessage, SystemMessage

        round_ = state.get("round", 0)
        prompt = self.ctx.reviewer_prompt(state.get("delivered", ""), round_)
        reply = self._ask(
            self.reviewer_model,
            [SystemMessage(content=prompt.system), HumanMessage(content=prompt.user)],
        )
        text = _reply_text(reply)
        self.ctx.trace.emit("review", "reviewer", text, round=round_)
        verdict = parse_verdict(text)
        onward: Route = "validate" if self.ctx.cell.config == "guardrail" else "emit"
        if verdict.decision == "reject" and not state.get("revised", False):
            # The reviewer's one revise pass, counted apart from the validator's (I32).
            return {"review": text, "next": "revise", "feedback": rejection_text(text),
                    "reason": verdict.reason, "revised": True}
        return {"review": text, "next": onward}

    def validate(self, state: PipelineState) -> Any:
        from langgraph.types import Command, interrupt

        failures = self.ctx.check_contract(state.get("delivered", ""))
        reason = "; ".join(failures)
        failed_before = state.get("contract_failures", 0)
        self.ctx.trace.emit(
            "guardrail",
            "validator",
            reason,
            name="contract",
            guardrail_kind="contract",
            success=not failures,
            retry_count=failed_before,
            max_retries=1,
            feedback=reason,
        )
        if not failures:
            return Command(goto="emit")
        if failed_before == 0:  # the validator's own first failure (SPEC.md I32)
            self.ctx.trace.emit(
                "route", "validator", reason, goto="revise", source="validator", reason=reason
            )
            return Command(
                goto="revise",
                update={"feedback": reason, "reason": reason,
                        "contract_failures": failed_before + 1},
            )
        interrupt(reason)
        return None  # not reached: interrupt() raises on its first call

    def emit(self, state: PipelineState) -> PipelineState:
        self.ctx.emit(state.get("delivered", ""))
        return {}


def _after_review(state: PipelineState) -> Route:
    return state.get("next", "emit")


# The key of the run's ``_Pipeline`` in the ``configurable`` of each invoke: the compiled
# graph is shared by every run of a config in the process, so what a run owns (its context,
# tools, model clients) reaches the nodes through the invoke, never through the graph.
_PIPELINE_KEY = "sabot_pipeline"


def _run_node(name: str) -> Any:
    """A graph node calling ``name`` on the invoke's pipeline, then pulling any model
    exchanges it caused into that run's trace."""

    def run_node(state: PipelineState, config: RunnableConfig) -> Any:
        pipeline: _Pipeline = config["configurable"][_PIPELINE_KEY]
        try:
            return getattr(pipeline, name)(state)
        finally:
            pipeline.ctx.sync_model_calls()

    run_node.__name__ = name
    return run_node


_compiled: dict[bool, tuple[Any, Any]] = {}
_compiled_lock = threading.Lock()


def compiled_graph(config: str) -> tuple[Any, Any]:
    """The compiled graph of a config and its in-memory checkpointer (interrupts need one),
    built on the first run of that config in this process and reused by every later run.
    Each run invokes it on a thread of its own and removes that thread afterwards."""
    guarded = config == "guardrail"
    with _compiled_lock:
        built = _compiled.get(guarded)
        if built is None:
            built = _compile(guarded)
            _compiled[guarded] = built
        return built


def _compile(guarded: bool) -> tuple[Any, Any]:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(PipelineState)
    graph.add_node("load", _run_node("load"))
    graph.add_node("worker", _run_node("worker"))
    graph.add_node("review", _run_node("review"))
    graph.add_node("revise", _run_node("revise"))
    graph.add_node("emit", _run_node("emit"))
    graph.add_edge(START, "load")
    graph.add_edge("load", "worker")
    graph.add_edge("worker", "review")
    graph.add_edge("revise", "review")
    graph.add_edge("emit", END)
    if guarded:
        graph.add_node("validate", _run_node("validate"), destinations=("emit", "revise"))
        graph.add_conditional_edges("review", _after_review, ["revise", "validate"])
    else:
        graph.add_conditional_edges("review", _after_review, ["revise", "emit"])
    saver = InMemorySaver()
    return graph.compile(checkpointer=saver), saver


_run_numbers = itertools.count(1)


def run(ctx: RunContext) -> None:
    """Run one cell's LangGraph pipeline to its end, recording its surfaces in the trace."""
    graph, saver = compiled_graph(ctx.cell.config)
    # A thread id of this run alone: the checkpointer is shared by the process's runs.
    thread_id = f"{ctx.cell.id}#{next(_run_numbers)}"
    async_http = ctx.http_async_client()
    try:
        pipeline = _Pipeline(ctx, async_http)
        result = graph.invoke(
            {"round": 0},
            config={
                "configurable": {"thread_id": thread_id, _PIPELINE_KEY: pipeline},
                "recursion_limit": RECURSION_LIMIT,
            },
            version=INVOKE_VERSION,
        )
    finally:
        saver.delete_thread(thread_id)
        asyncio.run(async_http.aclose())  # unused: the graph is invoked synchronously
    if not isinstance(result, dict):
        raise TypeError(
            f"LangGraph invoke(version={INVOKE_VERSION!r}) returned {type(result).__name__}, "
            "not the state dict this adapter reads '__interrupt__' from"
        )
    interrupts = result.get("__interrupt__")
    if interrupts:
        reason = "; ".join(str(item.value) for item in interrupts)
        ctx.trace.emit("interrupt", "validator", reason, reason=reason)
        ctx.trace.emit("run_end", "pipeline", reason, status="task_failed", detail=reason)
