"""The worker role: works the task with its procedure, one step per model call.

With native tools offered, a tool step becomes an OpenAI ``tool_calls`` entry and the
observations come back as ``tool`` messages. With CrewAI's text tool format, a tool step is
written as ``Action:`` / ``Action Input:`` and the observation comes back inside the
conversation. With no tools at all, the worker answers with its final draft directly.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pytest_sabot.core import prompt_format as pf
from pytest_sabot.core.errors import ModelRefused
from pytest_sabot.core.prompt_format import Section
from pytest_sabot.sim import solver
from pytest_sabot.sim.completion import Reply, ToolCallOut
from pytest_sabot.sim.frames import is_react
from pytest_sabot.sim.personas import Persona, lab_recovery
from pytest_sabot.sim.procedures.types import ToolRequest
from pytest_sabot.sim.request import ChatView, ToolExchange, ToolOffered
from pytest_sabot.sim.sections import gather, task_id

_REACT_ACTION = re.compile(
    r"Action:\s*(?P<name>[^\n]+)\nAction Input:\s*(?P<args>.*?)(?:\nObservation:\s*(?P<obs>.*))?$",
    re.DOTALL,
)


_TOOL_LINE = re.compile(r"^- ([A-Za-z_][A-Za-z0-9_]*)\(", re.MULTILINE)


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def match_tool(wanted: str, offered: tuple[ToolOffered, ...]) -> str | None:
    """The offered tool name for a procedure's tool name (exact, normalised, then contained)."""
    for t in offered:
        if t.name == wanted:
            return t.name
    key = _norm(wanted)
    for t in offered:
        if _norm(t.name) == key:
            return t.name
    for t in offered:
        if key and key in _norm(t.name):
            return t.name
    return None


def _react_history(view: ChatView) -> list[ToolExchange]:
    out: list[ToolExchange] = []
    for m in view.messages:
        if m.role != "assistant":
            continue
        match = _REACT_ACTION.search(m.text)
        if not match:
            continue
        raw_args = match.group("args").strip().strip("`").strip()
        try:
            parsed: Any = json.loads(raw_args) if raw_args else {}
        except ValueError:
            parsed = {"input": raw_args}
        args = parsed if isinstance(parsed, dict) else {"input": parsed}
        out.append(
            ToolExchange(match.group("name").strip(), args, (match.group("obs") or "").strip())
        )
    return out


def worker_sections(view: ChatView) -> list[Section]:
    """Our sections in the worker's system and user-side messages."""
    return gather(view.texts("system", "developer", "user"))


def tool_names(sections: list[Section]) -> set[str]:
    """Tool names as our TOOLS section lists them ('- name(args) [role]: ...' lines)."""
    sec = pf.first(sections, pf.TOOLS)
    return set(_TOOL_LINE.findall(sec.body)) if sec is not None else set()


def _canonical(history: list[ToolExchange], procedure_names: set[str]) -> list[ToolExchange]:
    """History with tool names mapped back to the procedure's own names where they match."""
    by_norm = {_norm(n): n for n in procedure_names}
    return [
        ToolExchange(by_norm.get(_norm(h.name), h.name), h.arguments, h.result, h.call_id)
        for h in history
    ]


NO_TASK = "a === TASK === section naming a task it knows (T1, T2, ...)"


def worker_reply(view: ChatView, persona: Persona, seed: int = 0, agent: str = "") -> Reply:
    sections = worker_sections(view)
    task = task_id(sections)
    system_text = "\n".join(view.texts("system"))
    offered = view.tools if view.tool_choice != "none" else ()
    react = not offered and is_react(system_text)
    history = _react_history(view) if react else view.tool_history()
    listed = tool_names(sections)
    history = _canonical(history, listed)
    if react:
        available: set[str] | None = None
    else:
        available = {n for n in listed if match_tool(n, offered) is not None}
    step = solver.worker_step(task, sections, history, weak=persona.weak, available=available,
                              recovery=lab_recovery(persona, seed))
    if step is None:
        raise ModelRefused("worker", agent, NO_TASK)
    if isinstance(step, ToolRequest):
        if offered:
            name = match_tool(step.tool, offered)
            if name is not None:
                return Reply(None, (ToolCallOut(name, step.arguments),))
        elif react:
            args = json.dumps(step.arguments, sort_keys=True, ensure_ascii=False)
            return Reply(
                f"Thought: I need the {step.tool} tool next.\n"
                f"Action: {step.tool}\nAction Input: {args}"
            )
        return Reply(
            f"I need to call the {step.tool} tool with "
            f"{json.dumps(step.arguments, sort_keys=True)}, "
            "but no such tool is available to me here."
        )
    if react:
        return Reply(f"Thought: I now can give a great answer\nFinal Answer: {step.text}")
    return Reply(step.text)
