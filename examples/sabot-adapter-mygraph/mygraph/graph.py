"""A research-and-check graph: an LLM agent that may call tools, and a checker that reads
the agent's draft and either lets it go or sends it back once with its notes.

::

    START -> agent <-> tools
               |
               v
            checker -> revise -> agent ...   (at most ``max_revisions`` times)
               |
               v
              END

The graph takes what it needs as parameters: the chat model of the agent and of the
checker, the agent's tools, and two prompt builders (what the checker is asked about a
draft, what the agent is told when a draft comes back). Invoke it with the task as its
first messages::

    graph = build_graph(model, tools, review_prompt=..., revise_prompt=...)
    final = graph.invoke({"messages": [SystemMessage(...), HumanMessage(...)]})
    final["draft"], final["approved"], final["review"]

The checker's last line decides: a line containing REJECT sends the draft back, anything
else lets it go.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.prebuilt import ToolNode

PromptBuilder = Callable[[str], Sequence[BaseMessage]]


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    draft: str  # the agent's last answer
    tool_rounds: int  # tool-calling replies in the current pass
    review: str  # the checker's last reply
    approved: bool
    revisions: int  # how many times a draft came back


def _default_revise(notes: str) -> list[BaseMessage]:
    return [HumanMessage(f"A checker sent your draft back with these notes:\n{notes}\n"
                         "Write the whole answer again.")]


def build_graph(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    *,
    review_prompt: PromptBuilder,
    revise_prompt: PromptBuilder = _default_revise,
    checker_model: BaseChatModel | None = None,
    max_revisions: int = 1,
    max_tool_rounds: int = 8,
) -> Any:
    """Compile the graph. ``review_prompt(draft)`` gives the checker's messages;
    ``revise_prompt(notes)`` the messages a returned draft starts the agent's next pass
    with (its conversation starts over). After ``max_tool_rounds`` tool-calling replies in
    one pass the agent is asked once more without tools and must answer."""
    with_tools = model.bind_tools(list(tools)) if tools else model
    checker = checker_model or model

    def agent(state: State) -> dict[str, Any]:
        rounds = state.get("tool_rounds", 0)
        llm = with_tools if rounds < max_tool_rounds else model
        reply = llm.invoke(state["messages"])
        if getattr(reply, "tool_calls", None):
            return {"messages": [reply], "tool_rounds": rounds + 1}
        return {"messages": [reply], "draft": reply.text}

    def after_agent(state: State) -> Literal["tools", "checker"]:
        last = state["messages"][-1]
        return "tools" if getattr(last, "tool_calls", None) else "checker"

    def check(state: State) -> dict[str, Any]:
        reply = checker.invoke(list(review_prompt(state.get("draft", ""))))
        text = reply.text
        lines = text.strip().splitlines()
        return {"review": text, "approved": not lines or "REJECT" not in lines[-1].upper()}

    def after_check(state: State) -> Literal["revise", "__end__"]:
        if state.get("approved", True) or state.get("revisions", 0) >= max_revisions:
            return END
        return "revise"

    def revise(state: State) -> dict[str, Any]:
        restart: list[Any] = [RemoveMessage(id=REMOVE_ALL_MESSAGES)]
        return {
            "messages": restart + list(revise_prompt(state.get("review", ""))),
            "revisions": state.get("revisions", 0) + 1,
            "tool_rounds": 0,
        }

    graph = StateGraph(State)
    graph.add_node("agent", agent)
    graph.add_node("checker", check)
    graph.add_node("revise", revise)
    graph.add_edge(START, "agent")
    if tools:
        graph.add_node("tools", ToolNode(list(tools)))
        graph.add_conditional_edges("agent", after_agent, ["tools", "checker"])
        graph.add_edge("tools", "agent")
    else:
        graph.add_edge("agent", "checker")
    graph.add_conditional_edges("checker", after_check, ["revise", END])
    graph.add_edge("revise", "agent")
    return graph.compile()
