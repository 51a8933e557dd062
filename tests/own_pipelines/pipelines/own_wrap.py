"""Two public-style pipelines wrapped with the adapter protocol, as a user wraps them
(docs/ADAPTERS.md): ``reflection`` (the LangGraph reflection loop of reflection_graph.py)
and ``critic_team`` (the AutoGen writer/critic team of critic_team.py), each registered
with ``--sabot-adapter own_wrap:reflection`` or ``own_wrap:critic_team``.

The pipelines keep their own reviewer prompts and stop conditions. ``OWN_WIRING`` picks a
keyless wiring check instead (docs/ADAPTERS.md, "Keyless wiring check"):

* unset: the pipelines as written (their own judge and critic prompts);
* ``harness``: the judge and the critic are handed the harness's reviewer prompt and the
  verdict token decides (the loop's approval, the team's stop), one revision at most;
* ``prompt-only``: the harness's reviewer prompt handed in, but the loop still waits for
  the ``Finish`` tool call: the first wiring of an adapter author who has not mapped the
  approval yet (a loop that never ends).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pytest_sabot.api import FrameworkAdapter, RunContext, routing_verdict

HERE = Path(__file__).parent


def reflection() -> FrameworkAdapter:
    return FrameworkAdapter(
        name="reflection",
        run="own_wrap:run_reflection",
        packages={"langgraph": "1.2.9", "langchain-openai": "1.4.0"},
        modules=("langgraph", "langchain_openai"),
        mapping=str(HERE / "reflection.yaml"),
        cost_per_run={"default": (6, 2500, 400)},
    )


def critic_team() -> FrameworkAdapter:
    return FrameworkAdapter(
        name="critic_team",
        run="own_wrap:run_critic_team",
        packages={"autogen-agentchat": "0.7.5", "autogen-ext": "0.7.5"},
        modules=("autogen_agentchat", "autogen_ext"),
        mapping=str(HERE / "critic_team.yaml"),
        cost_per_run={"default": (6, 2500, 400)},
    )


def _wiring() -> str:
    return os.environ.get("OWN_WIRING", "")


def _approves(text: str) -> bool:
    return routing_verdict(text).decision == "approve"


# ---------------------------------------------------------------- the reflection loop


def run_reflection(ctx: RunContext) -> None:
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from reflection_graph import build_graph, called_finish, judge_messages, revise_messages

    wiring = _wiring()
    async_http = ctx.http_async_client()

    def chat(agent: str) -> Any:
        return ChatOpenAI(model=ctx.model_name, base_url=ctx.base_url(agent),
                          api_key=ctx.api_key, max_retries=0, use_responses_api=False,
                          http_client=ctx.http_client(), http_async_client=async_http)

    seen = {"round": 0, "delivered": ""}

    def judge_prompt(draft: str) -> list[Any]:
        delivered = ctx.handoff("worker", "reviewer", draft)
        seen["delivered"] = delivered
        if not wiring:
            return judge_messages(delivered)
        prompt = ctx.reviewer_prompt(delivered, min(seen["round"], 1))
        return [SystemMessage(prompt.system), HumanMessage(prompt.user)]

    def revise_prompt(notes: str) -> list[Any]:
        seen["round"] += 1
        if not wiring:
            return revise_messages(notes)
        return [HumanMessage(ctx.worker_prompt(1, notes).user)]

    def tool(handle: Any) -> Any:
        def call(**arguments: Any) -> str:
            return handle.invoke(arguments)

        return StructuredTool(name=handle.name, description=handle.description,
                              args_schema=handle.parameters, func=call)

    graph = build_graph(
        chat("worker"), chat("reviewer"), [tool(h) for h in ctx.tools],
        judge_prompt=judge_prompt,
        revise_prompt=revise_prompt,
        approved=(lambda reply: _approves(str(reply.content))) if wiring == "harness"
        else called_finish,
        max_rounds=2 if wiring == "harness" else None,
    )
    task = ctx.worker_prompt(0)
    start = {"messages": [SystemMessage(task.system), HumanMessage(task.user)],
             "draft": "", "notes": "", "rounds": 0, "done": False}
    try:
        # The example's README: raise the recursion limit for long reports.
        for chunk in graph.stream(start, {"recursion_limit": 10_000}, stream_mode="updates"):
            for node, update in chunk.items():
                ctx.sync_model_calls()
                round_ = min(seen["round"], 1)
                if node == "write":
                    ctx.trace.emit("agent_output", "writer", update["draft"],
                                   stage="revise" if round_ else "worker", round=round_)
                elif node == "reflect":
                    ctx.trace.emit("review", "judge", update["notes"], round=round_)
                    if not update["done"]:
                        reason = routing_verdict(update["notes"]).reason or update["notes"]
                        ctx.trace.emit("retry", "writer", reason, source="revise",
                                       reason=reason, feedback=update["notes"])
    finally:
        asyncio.run(async_http.aclose())
    ctx.sync_model_calls()
    ctx.emit(seen["delivered"])


# ---------------------------------------------------------------- the writer/critic team


def run_critic_team(ctx: RunContext) -> None:
    asyncio.run(_critic_team(ctx))


async def _critic_team(ctx: RunContext) -> None:
    from autogen_agentchat.messages import TextMessage
    from autogen_core import CancellationToken
    from autogen_core.model_context import UnboundedChatCompletionContext
    from autogen_core.models import LLMMessage, ModelInfo, SystemMessage, UserMessage
    from autogen_core.tools import BaseTool, ToolSchema
    from autogen_ext.models.openai import OpenAIChatCompletionClient
    from critic_team import build_team
    from pydantic import BaseModel, ConfigDict

    class Args(BaseModel):
        model_config = ConfigDict(extra="allow")

    class Tool(BaseTool[Args, BaseModel]):
        def __init__(self, handle: Any) -> None:
            super().__init__(Args, BaseModel, handle.name, handle.description)
            self.handle = handle

        @property
        def schema(self) -> ToolSchema:
            return ToolSchema(name=self.handle.name, description=self.handle.description,
                              parameters=dict(self.handle.parameters))  # type: ignore[typeddict-item]

        async def run(self, args: Args, cancellation_token: CancellationToken) -> Any:
            ctx.sync_model_calls()
            return self.handle.invoke(args.model_dump())

    wiring = _wiring()
    info = ModelInfo(vision=False, function_calling=True, json_output=True,
                     family="unknown", structured_output=True)
    clients = [
        OpenAIChatCompletionClient(model=ctx.model_name, base_url=ctx.base_url(agent),
                                   api_key=ctx.api_key, max_retries=0, model_info=info,
                                   http_client=ctx.http_async_client())
        for agent in ("worker", "critic")
    ]
    seen: dict[str, Any] = {"round": 0, "draft": "", "delivered": ""}

    class CriticContext(UnboundedChatCompletionContext):
        """What the critic reads: the writer's latest report crosses ctx.handoff; with the
        wiring check on, the harness's reviewer prompt replaces the critic's own."""

        async def get_messages(self) -> list[LLMMessage]:
            messages = await super().get_messages()
            delivered = ctx.handoff("worker", "reviewer", seen["draft"])
            seen["delivered"] = delivered
            if wiring:
                prompt = ctx.reviewer_prompt(delivered, min(seen["round"], 1))
                return [SystemMessage(content=prompt.system),
                        UserMessage(content=prompt.user, source="harness")]
            return [*messages[:-1], UserMessage(content=delivered, source="writer")]

    task = ctx.worker_prompt(0)
    team = build_team(clients[0], clients[1], writer_system=task.system,
                      writer_tools=[Tool(h) for h in ctx.tools],
                      critic_context=CriticContext(),
                      max_messages=5 if wiring else None)
    try:
        async for item in team.run_stream(task=task.user):
            if not isinstance(item, TextMessage):
                continue
            ctx.sync_model_calls()
            round_ = min(seen["round"], 1)
            if item.source == "writer":
                seen["draft"] = item.content
                ctx.trace.emit("agent_output", "writer", item.content,
                               stage="revise" if round_ else "worker", round=round_)
            elif item.source == "critic":
                ctx.trace.emit("review", "critic", item.content, round=round_)
                if "APPROVE" not in item.content:
                    reason = routing_verdict(item.content).reason or item.content
                    ctx.trace.emit("retry", "writer", reason, source="revise", reason=reason,
                                   feedback=item.content)
                    seen["round"] += 1
    finally:
        for client in clients:
            await client.close()
    ctx.sync_model_calls()
    ctx.emit(seen["delivered"] or seen["draft"])
