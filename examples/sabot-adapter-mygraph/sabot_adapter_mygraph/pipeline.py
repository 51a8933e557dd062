"""mygraph as a Sabot pipeline: build the user's graph from the run context, run it, and
translate what it does into the canonical trace events.

What the graph is given (it knows nothing of Sabot):

* ``model`` / ``checker_model``: two ``ChatOpenAI`` clients, one per agent, on the run's
  per-agent endpoints (``ctx.base_url("worker")``, ``ctx.base_url("reviewer")``) and the
  run's HTTP clients; no retries (the harness's gateway is the only retry layer);
* ``tools``: the task's tools, each a LangChain ``StructuredTool`` whose body is the
  harness's ``ToolHandle.invoke`` (so every call is recorded and passes the fault seams);
* ``review_prompt(draft)``: sends the draft through the harness's handoff channel (the
  message seam) and returns the reviewer messages for what arrived;
* ``revise_prompt(notes)``: the worker messages of the next pass, carrying the notes;
* the task itself as the first messages: ``ctx.worker_prompt(0)`` (the load seam).

What the graph does is read from LangGraph's own update stream, one update per node:

=============  =================================  ==========================================
node update    event                              why
=============  =================================  ==========================================
agent (draft)  agent_output (worker/revise)       the draft of a pass
agent (cap)    cap (worker_model_calls)           the pass reached its tool rounds
checker        review (component checker)         the checker's reply, verdict included
revise         retry (source revise, reason)      the draft goes back carrying the notes
=============  =================================  ==========================================

After every update the run's model exchanges are pulled into the trace, so a model call
always precedes what was derived from it. The artifact is the draft as the checker last
received it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mygraph import build_graph

from pytest_sabot.api import Messages, RunContext, ToolHandle, routing_verdict

if TYPE_CHECKING:
    import httpx
    from langchain_core.messages import BaseMessage
    from langchain_core.tools import BaseTool
    from langchain_openai import ChatOpenAI

MAX_TOOL_ROUNDS = 8
RECURSION_LIMIT = 60


def _chat_model(ctx: RunContext, agent: str, async_http: httpx.AsyncClient) -> ChatOpenAI:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=ctx.model_name,
        base_url=ctx.base_url(agent),
        api_key=ctx.api_key,
        max_retries=0,
        use_responses_api=False,
        http_client=ctx.http_client(),
        http_async_client=async_http,
    )


def _tool(handle: ToolHandle) -> BaseTool:
    from langchain_core.tools import StructuredTool

    def call(**arguments: Any) -> str:
        return handle.invoke(arguments)

    return StructuredTool(
        name=handle.name, description=handle.description, args_schema=handle.parameters,
        func=call,
    )


def _messages(prompt: Messages) -> list[BaseMessage]:
    from langchain_core.messages import HumanMessage, SystemMessage

    return [SystemMessage(content=prompt.system), HumanMessage(content=prompt.user)]


class _Run:
    """One run: the prompt builders handed to the graph and the translation of its updates."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.round = 0  # the agent's pass: 0, then 1 after a revision
        self.tool_rounds = 0  # tool-calling replies of the current pass
        self.delivered = ""  # the draft as the checker last received it
        self.review = ""  # the checker's last reply

    def review_prompt(self, draft: str) -> Sequence[BaseMessage]:
        self.delivered = self.ctx.handoff("worker", "reviewer", draft)
        return _messages(self.ctx.reviewer_prompt(self.delivered, self.round))

    def revise_prompt(self, notes: str) -> Sequence[BaseMessage]:
        return _messages(self.ctx.worker_prompt(self.round + 1, _reason(notes)))

    def on_update(self, node: str, update: dict[str, Any]) -> None:
        ctx = self.ctx
        ctx.sync_model_calls()
        if node == "agent":
            self.tool_rounds = update.get("tool_rounds", self.tool_rounds)
            if "draft" in update:
                if self.tool_rounds >= MAX_TOOL_ROUNDS:  # answered without tools, as told
                    ctx.trace.emit("cap", "worker", cap="worker_model_calls",
                                   limit=MAX_TOOL_ROUNDS, setting="max_tool_rounds",
                                   ending="forced_final_answer", round=self.round)
                ctx.trace.emit("agent_output", "worker", update["draft"],
                               stage="revise" if self.round else "worker", round=self.round)
        elif node == "checker":
            self.review = str(update.get("review", ""))
            ctx.trace.emit("review", "checker", self.review, round=self.round)
        elif node == "revise":
            self.round += 1
            self.tool_rounds = 0
            reason = _reason(self.review)
            ctx.trace.emit("retry", "worker", reason, source="revise", reason=reason)


def _reason(review: str) -> str:
    """The checker's reason: its verdict token's, else its whole reply."""
    return routing_verdict(review).reason or review.strip()


def run(ctx: RunContext) -> None:
    """Run one cell with mygraph, recording what it does in the trace."""
    async_http = ctx.http_async_client()
    this = _Run(ctx)
    try:
        graph = build_graph(
            _chat_model(ctx, "worker", async_http),
            [_tool(h) for h in ctx.tools],
            review_prompt=this.review_prompt,
            revise_prompt=this.revise_prompt,
            checker_model=_chat_model(ctx, "reviewer", async_http),
            max_revisions=1,
            max_tool_rounds=MAX_TOOL_ROUNDS,
        )
        task = _messages(ctx.worker_prompt(0))
        for chunk in graph.stream({"messages": task}, {"recursion_limit": RECURSION_LIMIT},
                                  stream_mode="updates"):
            for node, update in chunk.items():
                this.on_update(node, update or {})
    finally:
        asyncio.run(async_http.aclose())  # the graph runs synchronously; close the unused one
    ctx.sync_model_calls()
    ctx.emit(this.delivered)
