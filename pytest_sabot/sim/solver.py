"""The bridge between the embedded model's roles and the per-task procedures.

``pytest_sabot.sim.procedures`` knows how to work each task (which tool to call next, what
the final artifact is, what a careful reviewer would find). This module calls it and
converts its answers into the small records the roles use. When no procedure exists for
a task (or the procedures cannot be imported), the functions return None and the role
answers with a plain, deterministic reply instead.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pytest_sabot.harness.prompt_format import Section
from pytest_sabot.sim.findings import GENERIC_PARAPHRASE, Finding
from pytest_sabot.sim.request import ToolExchange


@dataclass(frozen=True)
class ToolStep:
    """The worker wants to call a tool."""

    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class FinalStep:
    """The worker is done: this is its final reply (the draft artifact)."""

    text: str


Step = ToolStep | FinalStep


def _procedures() -> ModuleType | None:
    try:
        return importlib.import_module("pytest_sabot.sim.procedures")
    except ImportError:
        return None


def _as_step(raw: Any) -> Step | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        return FinalStep(raw)
    tool = getattr(raw, "tool", None) or getattr(raw, "name", None)
    args = getattr(raw, "arguments", None)
    if isinstance(tool, str) and tool and isinstance(args, dict):
        return ToolStep(tool, dict(args))
    text = getattr(raw, "text", None)
    if isinstance(text, str):
        return FinalStep(text)
    return None


def _as_finding(raw: Any) -> Finding | None:
    if isinstance(raw, Finding):
        return raw
    if isinstance(raw, str):
        return Finding(summary=raw)
    summary = getattr(raw, "summary", None) or getattr(raw, "text", None)
    if not isinstance(summary, str) or not summary:
        return None
    quotes = getattr(raw, "quotes", None) or getattr(raw, "values", None) or ()
    paraphrase = getattr(raw, "paraphrase", None) or GENERIC_PARAPHRASE
    return Finding(
        summary=summary,
        quotes=tuple(str(q) for q in quotes),
        paraphrase=str(paraphrase),
    )


def worker_step(
    task: str, sections: list[Section], history: list[ToolExchange], *, weak: bool
) -> Step | None:
    """The worker's next step for the task, or None when there is no procedure for it."""
    mod = _procedures()
    fn = getattr(mod, "worker_step", None) if mod else None
    if fn is None or not task:
        return None
    return _as_step(fn(task, sections, history, weak=weak))


def review(task: str, sections: list[Section]) -> list[Finding] | None:
    """What a careful reviewer finds in the inputs, or None when there is no procedure."""
    mod = _procedures()
    fn = getattr(mod, "review", None) if mod else None
    if fn is None or not task:
        return None
    out: list[Finding] = []
    for raw in fn(task, sections) or []:
        finding = _as_finding(raw)
        if finding is not None:
            out.append(finding)
    return out


def contract_problems(task: str, sections: list[Section]) -> list[str]:
    """Ways the DRAFT section breaks the CONTRACT section, as the procedure sees them."""
    mod = _procedures()
    fn = getattr(mod, "contract_problems", None) if mod else None
    if fn is None or not task:
        return []
    return [str(p) for p in fn(task, sections) or []]


def is_draft(task: str, sections: list[Section], text: str) -> bool:
    """Whether a worker message is a draft of the artifact (not a tool observation).

    Uses the procedure's own judgment when it offers one; otherwise any non-empty message
    whose sections do not break the contract counts as a draft.
    """
    if not text.strip():
        return False
    mod = _procedures()
    fn = getattr(mod, "is_draft", None) if mod else None
    if fn is not None and task:
        return bool(fn(task, sections, text))
    return True
