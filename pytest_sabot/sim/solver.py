"""The bridge between the embedded model's roles and the per-task procedures.

``pytest_sabot.sim.procedures`` knows how to work each task (which tool to call next, what
the final artifact is, what a careful reviewer finds, how a draft breaks the contract).
This module calls it and hands its answers to the roles in the records the roles use. For
a task without a procedure (or a prompt naming no task) the functions answer None or
empty, and the role replies with a plain, deterministic text instead.
"""

from __future__ import annotations

import re

from pytest_sabot.core import prompt_format as pf
from pytest_sabot.core.prompt_format import Section
from pytest_sabot.sim import procedures
from pytest_sabot.sim.findings import Finding
from pytest_sabot.sim.procedures.types import FinalAnswer, Step
from pytest_sabot.sim.request import ToolExchange


def known(task: str) -> bool:
    """Whether a procedure exists for the task id."""
    return bool(task) and task in procedures.known_tasks()


def worker_step(
    task: str,
    sections: list[Section],
    history: list[ToolExchange],
    *,
    weak: bool,
    available: set[str] | None = None,
    recovery: str = "",
) -> Step | None:
    """The worker's next step, or None when there is no procedure for the task.

    ``available`` names the TOOLS-section tools the call really offers (None: all of
    them). When the procedure wants a tool that is not on offer (a framework turn without
    tools, such as AutoGen's reflection call, or a team that only hands the worker its
    data tool), the worker finishes with what it has: the procedure is shown only the
    tools it can use or already used, and if it still wants another one, no tools at all,
    so it composes its final answer instead.
    """
    if not known(task):
        return None
    step = procedures.worker_step(task, sections, history, weak=weak, recovery=recovery)
    if available is None or isinstance(step, FinalAnswer) or step.tool in available:
        return step
    keep = available | {h.name for h in history}
    narrowed = [_only_tools(s, keep) if s.name == pf.TOOLS else s for s in sections]
    step = procedures.worker_step(task, narrowed, history, weak=weak, recovery=recovery)
    if isinstance(step, FinalAnswer) or step.tool in available:
        return step
    bare = [s for s in sections if s.name != pf.TOOLS]
    return procedures.worker_step(task, bare, history, weak=weak, recovery=recovery)


_TOOL_LINE = re.compile(r"^- ([A-Za-z_][A-Za-z0-9_]*)\(")


def _only_tools(section: Section, keep: set[str]) -> Section:
    """A TOOLS section listing only the tools named in ``keep`` (other lines stay)."""
    lines = []
    for line in section.body.splitlines():
        m = _TOOL_LINE.match(line)
        if m is None or m.group(1) in keep:
            lines.append(line)
    return Section(section.name, section.label, "\n".join(lines))


def review(task: str, sections: list[Section]) -> list[Finding]:
    """What a careful reviewer finds in the inputs ([] when there is no procedure)."""
    if not known(task):
        return []
    return [
        Finding(summary=f.summary, quotes=tuple(f.quotes), paraphrase=f.paraphrase)
        for f in procedures.review(task, sections)
    ]


def contract_problems(task: str, sections: list[Section]) -> list[str]:
    """Ways the DRAFT section breaks the CONTRACT, as the procedure sees them."""
    if not known(task):
        return []
    return list(procedures.contract_problems(task, sections))


def is_draft(task: str, sections: list[Section], text: str) -> bool:
    """Whether a worker message is a draft of the artifact (not a tool observation).

    Without a procedure, any non-empty message counts as a draft.
    """
    if not text.strip():
        return False
    if not known(task):
        return True
    return procedures.is_draft(task, sections, text)
