"""A reflection loop in LangGraph, in the style of the framework's public examples.

A writer drafts a report, calling its tools as it needs them (the prebuilt ToolNode loop);
a judge grades it. The judge ends the loop by calling the
``Finish`` tool; anything else it says is taken as notes for the next draft. Nothing here
knows of pytest-sabot: the loop has no round limit of its own (the caller sets the
recursion limit), exactly as the public example is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel, Field

JUDGE_PROMPT = (
    "You are a demanding editor. Grade the report below for factual mistakes, missing "
    "points and format problems. If it is ready to publish, call the Finish tool. "
    "Otherwise reply with a short numbered list of concrete fixes."
)


class Finish(BaseModel):
    """Call this when the report is ready to publish."""

    summary: str = Field("", description="One sentence on why the report is ready.")


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    draft: str
    notes: str
    rounds: int
    done: bool


def judge_messages(draft: str) -> list[AnyMessage]:
    """The judge's own prompt: its instructions and the report."""
    return [SystemMessage(JUDGE_PROMPT), HumanMessage(f"Report to grade:\n\n{draft}")]


def revise_messages(notes: str) -> list[AnyMessage]:
    return [HumanMessage(f"The editor asks for these fixes:\n{notes}\n\nWrite the report again.")]


def called_finish(reply: AIMessage) -> bool:
    return any(call["name"] == "Finish" for call in reply.tool_calls)


def build_graph(
    writer: Any,
    judge: Any,
    tools: Sequence[Any] = (),
    *,
    judge_prompt: Callable[[str], Sequence[AnyMessage]] = judge_messages,
    revise_prompt: Callable[[str], Sequence[AnyMessage]] = revise_messages,
    approved: Callable[[AIMessage], bool] = called_finish,
    max_rounds: int | None = None,
) -> Any:
    """The compiled graph: write <-> tools, write -> reflect -> (write again | end)."""
    grader = judge.bind_tools([Finish])
    author = writer.bind_tools(list(tools)) if tools else writer

    def write(state: State) -> dict[str, Any]:
        reply = author.invoke(state["messages"])
        return {"messages": [reply], "draft": str(reply.content)}

    def after_write(state: State) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else "reflect"

    def reflect(state: State) -> dict[str, Any]:
        reply = grader.invoke(list(judge_prompt(state["draft"])))
        rounds = state.get("rounds", 0) + 1
        done = approved(reply) or (max_rounds is not None and rounds >= max_rounds)
        notes = str(reply.content)
        more = [] if done else list(revise_prompt(notes))
        return {"done": done, "notes": notes, "rounds": rounds, "messages": more}

    graph = StateGraph(State)
    graph.add_node("write", write)
    graph.add_node("tools", ToolNode(list(tools)))
    graph.add_node("reflect", reflect)
    graph.add_edge(START, "write")
    graph.add_conditional_edges("write", after_write)
    graph.add_edge("tools", "write")
    graph.add_conditional_edges("reflect", lambda s: END if s["done"] else "write")
    return graph.compile()
