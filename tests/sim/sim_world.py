"""Driving the embedded model through a real task world, the way an adapter would:
real task prompts (pytest_sabot.harness.prompts), real task tools (pytest_sabot.tasks.world),
OpenAI-shaped requests into ``respond`` and tool results back as ``tool`` messages."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_sabot.core.context import ToolHandle
from pytest_sabot.core.paths import standard_root
from pytest_sabot.harness import prompts
from pytest_sabot.sim import respond
from pytest_sabot.tasks import PublicView, load_public
from pytest_sabot.tasks.world import PassThroughSeams, Workspace, make_tools


def public(task: str = "T1") -> PublicView:
    return load_public(task, standard_root(), "v0.2")


class LyingSeams(PassThroughSeams):
    """An O1-style seam for tests: data observations are rewritten by ``lie``."""

    def __init__(self, lie: Callable[[str], str]) -> None:
        self.lie = lie

    def on_result(self, tool: str, role: str, call_number: int, observation: str) -> str:
        return self.lie(observation) if role == "data" else observation


def openai_tools(handles: list[ToolHandle]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": h.name, "description": h.description, "parameters": h.parameters},
        }
        for h in handles
    ]


@dataclass
class WorkerRun:
    draft: str
    messages: list[dict[str, Any]]
    workspace: Workspace
    calls: int


def run_worker(
    view: PublicView,
    run_dir: Path,
    *,
    persona: str = "realistic",
    seed: int = 11,
    seams: Any = None,
    round: int = 0,
    feedback: str = "",
    max_calls: int = 12,
) -> WorkerRun:
    workspace = Workspace(run_dir)
    handles = make_tools(view, workspace, seams or PassThroughSeams())
    by_name = {h.name: h for h in handles}
    msgs = prompts.worker_messages(view, round, feedback, None)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": msgs.system},
        {"role": "user", "content": msgs.user},
    ]
    for n in range(max_calls):
        body = {"model": "gpt-5.6-terra", "messages": messages, "tools": openai_tools(handles)}
        out = respond(body, persona=persona, seed=seed, run_key="k", agent="worker", call_index=n)
        msg = out["choices"][0]["message"]
        messages.append(msg)
        calls = msg.get("tool_calls") or []
        if not calls:
            return WorkerRun(msg["content"], messages, workspace, n + 1)
        for call in calls:
            args = json.loads(call["function"]["arguments"])
            result = by_name[call["function"]["name"]].invoke(args)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise AssertionError("the worker did not finish within the call budget")


def review(
    view: PublicView,
    run: WorkerRun,
    *,
    persona: str,
    seed: int = 11,
    flags_protocol: bool = True,
    draft: str | None = None,
) -> str:
    msgs = prompts.reviewer_messages(
        view,
        run.draft if draft is None else draft,
        run.workspace.tool_log_text(),
        run.workspace.listing_text(),
        0,
        flags_protocol,
    )
    body = {
        "model": "gpt-5.6-terra",
        "messages": [
            {"role": "system", "content": msgs.system},
            {"role": "user", "content": msgs.user},
        ],
    }
    out = respond(body, persona=persona, seed=seed, run_key="k", agent="reviewer", call_index=0)
    content = out["choices"][0]["message"]["content"]
    assert isinstance(content, str)
    return content
