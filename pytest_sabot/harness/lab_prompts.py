"""Prompts of a lab task (T6), in the sectioned format every pipeline prompt uses.

The pipeline is told what a lab agent is told (docs/LAB.md, "The agent's side"): the public
request, the tools it may call and their published contracts (arguments, typed errors,
idempotency), plus the task's brief and output contract. The fault schedule, the world's
private fixtures and the expected counts never enter a prompt. The reviewer reads the
request, the contract, the delivered report and the worker's TOOL LOG (every lab tool call
of the latest pass with the answer it was shown); a lab task has no workspace files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_sabot.core.context import Messages
from pytest_sabot.harness import prompts
from pytest_sabot.lab.catalog import ToolContract
from pytest_sabot.tasks.loader import PublicView

WAIT_TOOL = "wait"
WAIT_DESCRIPTION = (
    "Wait this many milliseconds of the helpdesk's (virtual) time before your next call, "
    "for instance the retry_after_ms a rate_limited answer names."
)
WAIT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ms": {"type": "integer", "minimum": 0, "description": "Milliseconds to wait."}
    },
    "required": ["ms"],
}
ANSWER_FORMAT = (
    'Every tool answers one JSON object: {"ok": true, "result": {...}} on success, or '
    '{"ok": false, "error": {"code": "...", "message": "...", "retry_after_ms": N}} with a '
    "typed error code."
)

_WORKER_PREAMBLE = (
    "You are the worker of a small pipeline. Handle the helpdesk request in the TASK, BRIEF "
    "and MATERIAL sections with the tools described in TOOLS and nothing else. Your final "
    "reply is the report itself, exactly as the CONTRACT section specifies; a reviewer reads "
    "it next."
)
_REVIEWER_PREAMBLE = (
    "You are the reviewer of a small pipeline. A worker handled the helpdesk request below "
    "with the helpdesk tools and wrote the DRAFT report. Check the report against the "
    "request, the contract and the worker's TOOL LOG (every call it made and the answer it "
    "was shown), and decide whether the request was handled correctly."
)


def _signature(contract: ToolContract) -> str:
    props = contract.arguments.get("properties", {})
    return ", ".join(props) if isinstance(props, dict) else ""


def _tag(contract: ToolContract) -> str:
    if contract.effect == "read":
        return "read"
    support = contract.idempotency.support
    if support == "supported":
        return f"write; idempotency supported, key {contract.idempotency.key_argument}"
    return "write; idempotency unsupported"


def tool_description(contract: ToolContract) -> str:
    """The description a framework tool carries: what it does, its errors, idempotency."""
    errors = "; ".join(f"{e.code} ({e.when})" for e in contract.errors)
    return (f"{contract.description} Idempotency: {contract.idempotency.semantics} "
            f"Errors: {errors}. {ANSWER_FORMAT}")


def tools_text(catalog: Sequence[ToolContract]) -> str:
    """The TOOLS section body: one line per tool (name, arguments, read/write and its
    idempotency contract), the wait tool, the typed errors and the answer format."""
    lines = [f"- {c.name}({_signature(c)}) [{_tag(c)}]: {c.description}" for c in catalog]
    lines.append(f"- {WAIT_TOOL}(ms) [time]: {WAIT_DESCRIPTION}")
    semantics = sorted({c.idempotency.semantics for c in catalog if c.effect == "write"})
    lines += [f"Idempotency: {s}" for s in semantics]
    codes: dict[str, str] = {}
    for c in catalog:
        for e in c.errors:
            codes.setdefault(e.code, e.when)
    lines.append("Typed errors: " + "; ".join(f"{k}: {v}" for k, v in codes.items()) + ".")
    lines.append(ANSWER_FORMAT)
    return "\n".join(lines)


def worker_messages(
    view: PublicView, catalog: Sequence[ToolContract], round: int, feedback: str
) -> Messages:
    """The worker's messages for round 0 (first pass) or a revise pass with feedback."""
    return prompts.compose_worker(view, _WORKER_PREAMBLE, tools_text(catalog), round, feedback)


def reviewer_messages(
    view: PublicView,
    catalog: Sequence[ToolContract],
    delivered: str,
    tool_log_text: str,
    round: int,
    flags_protocol: bool,
) -> Messages:
    """The reviewer's messages: request, contract, tools, the report and the TOOL LOG, the
    verdict-token protocol and, when ``flags_protocol``, the FLAGS addendum."""
    return prompts.compose_reviewer(
        view, _REVIEWER_PREAMBLE, tools_text(catalog), delivered, tool_log_text, None, round,
        flags_protocol,
    )


def magentic_task(view: PublicView, catalog: Sequence[ToolContract], flags_protocol: bool) -> str:
    """The whole task for a Magentic-style team: its worker holds every helpdesk tool. With
    ``flags_protocol`` the FLAGS line is line 1 of the output contract (S10.2 head form)."""
    return prompts.compose_team_task(
        view,
        tools_text(catalog)
        + "\nThe team's worker holds every tool above; the team's final answer is the report.",
        flags_protocol,
    )
