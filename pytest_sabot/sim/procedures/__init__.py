"""The embedded model's per-task procedures: how to work each task and what a careful
reviewer finds.

They read only what an agent is sent (the parsed prompt sections of
``pytest_sabot.core.prompt_format``) and the tool observations it was shown; they never
open task files and import nothing of the task loader, the pass criteria or the operator
specs.

Public API (the task id is the one the TASK section names, e.g. "T1"):

``worker_step(task_id, sections, tool_history, *, weak) -> ToolRequest | FinalAnswer``
    The worker's next step. The sequence is: the data tool (once per value it needs), the
    check tool on the draft, the write tool with the draft, then the draft as the final
    reply. ``tool_history`` holds the exchanges so far (objects with ``name``,
    ``arguments`` and ``result``). The draft uses the tool values and the material texts
    exactly as given (so a corrupted tool value or a superseded material propagates);
    ``weak=True`` makes the task's downgrade mistake.

``review(task_id, sections) -> list[Finding]``
    What a careful reviewer finds in a reviewer prompt: the DRAFT cross-checked against
    the MATERIALs, the TOOL LOG (success claims without evidence, tool values that
    disagree with the materials, a draft that differs from what was written) and the
    WORKSPACE listing (a reported write whose file is absent). Each finding's summary
    quotes both conflicting values or names verbatim. Missing sections are skipped (a
    guardrail prompt has only TASK, CONTRACT and DRAFT).

``contract_problems(task_id, sections) -> list[str]``
    Ways the DRAFT breaks the task's published output contract (structure only).

``is_draft(task_id, sections, text) -> bool``
    Whether a message looks like an artifact of this task (not a tool observation).

Unknown task ids raise KeyError.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from pytest_sabot.core.prompt_format import Section
from pytest_sabot.sim.procedures import common, t1, t2, t3, t4, t5, t6
from pytest_sabot.sim.procedures.types import (
    ExchangeLike,
    FinalAnswer,
    Finding,
    Step,
    ToolRequest,
)

_TASKS: dict[str, ModuleType] = {"T1": t1, "T2": t2, "T3": t3, "T4": t4, "T5": t5, "T6": t6}


def _module(task_id: str) -> ModuleType:
    try:
        return _TASKS[task_id]
    except KeyError:
        raise KeyError(f"no procedure for task {task_id!r}; known: {sorted(_TASKS)}") from None


def known_tasks() -> list[str]:
    return sorted(_TASKS)


def worker_step(
    task_id: str,
    sections: Sequence[Section],
    tool_history: Sequence[ExchangeLike],
    *,
    weak: bool,
    recovery: str = "",
) -> Step:
    """``recovery`` is the worker's recovery style on a lab task (t6.RECOVERIES; ignored
    by the other tasks, empty for the task's own default)."""
    if task_id == "T6" and recovery:
        lab: Step = t6.worker_step(list(sections), list(tool_history), weak=weak,
                                   recovery=t6.recovery_style(recovery))
        return lab
    step: Step = _module(task_id).worker_step(list(sections), list(tool_history), weak=weak)
    return step


def review(task_id: str, sections: Sequence[Section]) -> list[Finding]:
    found: list[Finding] = _module(task_id).review(list(sections))
    return found


def contract_problems(task_id: str, sections: Sequence[Section]) -> list[str]:
    problems: list[str] = _module(task_id).contract_problems(list(sections))
    return problems


def is_draft(task_id: str, sections: Sequence[Section], text: str) -> bool:
    """Whether ``text`` has the artifact's basic form for the task (a JSON record, a
    summary carrying the category markers, Python with a function, the three-line
    answer); tool observations and chatter do not."""
    module = _module(task_id)
    body = common.clean_draft(text)
    if not body:
        return False
    looks: bool = module.looks_like_artifact(body)
    return looks


__all__ = [
    "ExchangeLike",
    "FinalAnswer",
    "Finding",
    "Step",
    "ToolRequest",
    "common",
    "contract_problems",
    "is_draft",
    "known_tasks",
    "review",
    "worker_step",
]
