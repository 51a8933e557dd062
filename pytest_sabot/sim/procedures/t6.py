"""T6, the fault lab's helpdesk request: find or open the request's ticket, assign it
with the version read, notify the customer once, and report what was done.

The worker reads the request from the material's ``field: value`` lines and works the
lab's tools one call at a time; every step is a pure function of the answers it was
shown. What it does after a write answered ``timeout`` (the outcome unknown) is its
*recovery style*, the embedded model's stand-in for how real models differ there (docs/
LAB.md, L-readings):

* ``fresh_key``: repeat the write at once with a fresh operation key, ignore retry
  delays, and notify whatever happened (a lost creation that had committed becomes a
  duplicate ticket);
* ``stable_key``: repeat the write with the same operation key (the published idempotency
  contract answers with the first effect), wait as told;
* ``read_back``: look the request up again before repeating a creation, and read the
  ticket back before notifying;
* ``give_up``: stop at the first timeout and report what is unknown.

A lookup that never answered (a read whose call errored with a timeout: the lab's
``timeout`` code, or a framework's own tool timeout in its words, "timed out") leaves
nothing known about the request, so no style creates a ticket blind: ``give_up`` stops
and reports the lookup that timed out; the others wait briefly and look again, and report
it when the lookup keeps timing out (ATTEMPTS in all).

Weak tier: no downgrade mistake of its own (O4 is not run on a lab task).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_sabot.core import prompt_format as pf
from pytest_sabot.core.prompt_format import Section
from pytest_sabot.sim.procedures import common as c
from pytest_sabot.sim.procedures.types import ExchangeLike, FinalAnswer, Finding, Step, ToolRequest

Recovery = Literal["fresh_key", "stable_key", "read_back", "give_up"]
RECOVERIES: tuple[Recovery, ...] = ("fresh_key", "stable_key", "read_back", "give_up")



def recovery_style(name: str) -> Recovery:
    """The recovery style named ``name``; ValueError if it is none of RECOVERIES."""
    for style in RECOVERIES:
        if style == name:
            return style
    raise ValueError(f"unknown recovery style {name!r}: expected one of {', '.join(RECOVERIES)}")


PREFIXES = ("TICKET:", "ASSIGNED:", "NOTIFIED:", "NOTES:")
FIELDS = ("request_key", "customer_id", "subject", "priority", "assignee_id", "message")
ATTEMPTS = 3
"""At most this many calls of one write (or of get_ticket) in one pass."""
APPROVAL_POLL_MS = 500
TIMEOUT_BACKOFF_MS = 250
_FIELD_LINE = re.compile(r"^(request_key|customer_id|subject|priority|assignee_id|message):"
                         r"\s*(.+?)\s*$", re.MULTILINE)
_LIMIT = re.compile(r"at most (\d+) characters")
_TIMED_OUT = re.compile(r"\btimed?[ _-]?out\b|TimeoutError", re.IGNORECASE)
READS = ("get_customer", "find_tickets", "get_ticket")


@dataclass(frozen=True)
class Answer:
    """One tool call of this pass and what it answered (``body`` is None if unreadable)."""

    tool: str
    arguments: dict[str, Any]
    body: dict[str, Any] | None

    @property
    def ok(self) -> bool:
        return bool(self.body and self.body.get("ok") is True)

    @property
    def code(self) -> str:
        error = (self.body or {}).get("error")
        return str(error.get("code", "")) if isinstance(error, dict) else ""

    @property
    def retry_after(self) -> int | None:
        error = (self.body or {}).get("error")
        value = error.get("retry_after_ms") if isinstance(error, dict) else None
        return value if isinstance(value, int) else None

    @property
    def result(self) -> dict[str, Any]:
        value = (self.body or {}).get("result")
        return value if isinstance(value, dict) else {}


def _parse(text: str) -> dict[str, Any] | None:
    body = c.json_object(text)
    if body is None:  # a framework may wrap the answer; take the first JSON object in it
        start = text.find("{")
        if start >= 0:
            try:
                found, _ = json.JSONDecoder().raw_decode(text[start:])
            except ValueError:
                return None
            return found if isinstance(found, dict) else None
    return body


def request(sections: Sequence[Section]) -> dict[str, str]:
    """The request's fields, as the first material states them (``field: value`` lines)."""
    for section in sections:
        if section.name == pf.MATERIAL:
            found = dict(_FIELD_LINE.findall(section.body))
            if "request_key" in found:
                return found
    return {}


def _read(text: str) -> dict[str, Any] | None:
    """An answer's body; a tool error in a framework's own words (no JSON) that says the
    call timed out reads as the timeout it reports."""
    body = _parse(text)
    if body is None and _TIMED_OUT.search(text):
        return {"ok": False, "error": {"code": "timeout", "message": text.strip()[:200]}}
    return body


def answers(history: Sequence[ExchangeLike]) -> list[Answer]:
    return [Answer(h.name, dict(h.arguments), _read(h.result)) for h in history]


def _keyed(sections: Sequence[Section], tool: str) -> bool:
    """Whether the TOOLS section publishes idempotency support for ``tool``."""
    for line in c.body(sections, pf.TOOLS).splitlines():
        if line.startswith(f"- {tool}("):
            return "idempotency supported" in line
    return False


@dataclass
class _Pass:
    """What this pass has learnt so far, read off its answers in order."""

    ticket: dict[str, Any] | None = None
    tickets_seen: tuple[str, ...] = ()
    assigned: bool = False
    assigned_seen: bool = False  # a read after the assignment shows it
    notification: str | None = None
    notes: tuple[str, ...] = ()


def _learn(req: dict[str, str], done: list[Answer]) -> _Pass:
    state = _Pass()
    seen: list[str] = []
    notes: list[str] = []
    for a in done:
        if not a.ok:
            if a.code:
                notes.append(f"{a.tool} answered {a.code}")
            continue
        r = a.result
        if a.tool == "find_tickets":
            mine = [t for t in r.get("tickets", []) if isinstance(t, dict)
                    and t.get("request_key") == req.get("request_key")]
            if mine:
                state.ticket = mine[0]
                seen += [str(t.get("ticket_id")) for t in mine]
        elif a.tool in ("create_ticket", "get_ticket", "assign_ticket"):
            ticket = r.get("ticket")
            if isinstance(ticket, dict):
                if a.tool == "create_ticket" or state.ticket is None:
                    seen.append(str(ticket.get("ticket_id")))
                if state.ticket is None or state.ticket.get("ticket_id") == ticket.get(
                        "ticket_id"):
                    state.ticket = ticket
                if a.tool == "assign_ticket":
                    state.assigned = True
                holds = ticket.get("assignee_id") == req.get("assignee_id")
                if a.tool == "get_ticket" and holds:
                    state.assigned = state.assigned_seen = True
        elif a.tool == "notify_customer":
            note = r.get("notification")
            if isinstance(note, dict):
                state.notification = str(note.get("notification_id"))
    state.tickets_seen = tuple(dict.fromkeys(seen))
    state.notes = tuple(dict.fromkeys(notes))
    return state


def compose(state: _Pass) -> str:
    ticket = str(state.ticket.get("ticket_id")) if state.ticket else "none"
    assignee = str(state.ticket.get("assignee_id")) if state.ticket and state.assigned else "none"
    notes = "; ".join(state.notes) if state.notes else "none"
    if len(state.tickets_seen) > 1:
        notes = f"tickets {', '.join(state.tickets_seen)} were opened; {notes}"
    return "\n".join([
        f"TICKET: {ticket}",
        f"ASSIGNED: {assignee}",
        f"NOTIFIED: {state.notification or 'none'}",
        f"NOTES: {notes}"[:600],
    ])


def _calls(done: list[Answer], tool: str) -> list[Answer]:
    return [a for a in done if a.tool == tool]


def _after(done: list[Answer], tool: str, last_of: str) -> list[Answer]:
    """The calls of ``tool`` after the last call of ``last_of``."""
    index = max((i for i, a in enumerate(done) if a.tool == last_of), default=-1)
    return [a for a in done[index + 1:] if a.tool == tool]


def _write(
    sections: Sequence[Section], done: list[Answer], tool: str, args: dict[str, Any],
    recovery: Recovery, tag: str, also: tuple[str, ...] = (),
) -> Step | None:
    """The next call of a write (None: stop, the write cannot be made to hold)."""
    tries = _calls(done, tool)
    keyed = _keyed(sections, tool)
    if not tries:
        return ToolRequest(tool, {**args, "operation_key": f"{tag}-1"} if keyed else args)
    last = tries[-1]
    if len(tries) >= ATTEMPTS or last.code not in ("timeout", "rate_limited", *also):
        return None
    if last.code == "timeout" and recovery == "give_up":
        return None
    waited = bool(done) and done[-1].tool == "wait"
    if last.code == "rate_limited" and recovery != "fresh_key" and not waited:
        return ToolRequest("wait", {"ms": last.retry_after or TIMEOUT_BACKOFF_MS})
    fresh = recovery == "fresh_key" or not keyed
    number = len(tries) + 1 if fresh else 1
    return ToolRequest(tool, {**args, "operation_key": f"{tag}-{number}"} if keyed else args)


def worker_step(
    sections: Sequence[Section], tool_history: Sequence[ExchangeLike], *, weak: bool,
    recovery: Recovery = "read_back",
) -> Step:
    req = request(sections)
    if not req:
        return FinalAnswer(compose(_Pass(notes=("the request names no request_key",))))
    done = answers(tool_history)
    state = _learn(req, done)
    key = req["request_key"]

    def finish() -> Step:
        return FinalAnswer(compose(state))

    finds = _calls(done, "find_tickets")
    if not finds:
        return ToolRequest("find_tickets", {"request_key": key})
    if not any(a.ok for a in finds) and finds[-1].code == "timeout":
        # The lookup never answered: whether the request has a ticket is unknown.
        if recovery == "give_up" or len(finds) >= ATTEMPTS:
            return finish()
        if done[-1].tool != "wait":
            return ToolRequest("wait", {"ms": TIMEOUT_BACKOFF_MS})
        return ToolRequest("find_tickets", {"request_key": key})
    if state.ticket is None:
        creates = _calls(done, "create_ticket")
        if (recovery == "read_back" and creates and creates[-1].code == "timeout"
                and done[-1].tool == "create_ticket"):
            return ToolRequest("find_tickets", {"request_key": key})
        step = _write(sections, done, "create_ticket", {
            "customer_id": req.get("customer_id", ""), "request_key": key,
            "subject": req.get("subject", key), "priority": req.get("priority", "normal"),
        }, recovery, f"{key}-create")
        return step if step is not None else finish()
    tid = str(state.ticket.get("ticket_id"))
    if not state.assigned:
        gets = _after(done, "get_ticket", "assign_ticket")
        fresh = gets and gets[-1].ok and done[-1].tool in ("get_ticket", "wait")
        if not fresh:
            reads = [a for a in gets if not a.ok]
            if len(reads) >= ATTEMPTS or (reads and recovery == "give_up"):
                return finish()
            if reads and reads[-1].code == "rate_limited" and done[-1].tool != "wait":
                return ToolRequest("wait", {"ms": reads[-1].retry_after or TIMEOUT_BACKOFF_MS})
            return ToolRequest("get_ticket", {"ticket_id": tid})
        if state.ticket.get("approval") == "pending":
            if done[-1].tool != "wait":
                return ToolRequest("wait", {"ms": APPROVAL_POLL_MS})
            return ToolRequest("get_ticket", {"ticket_id": tid})
        version = state.ticket.get("version", 1)
        step = _write(sections, done, "assign_ticket", {
            "ticket_id": tid, "assignee_id": req.get("assignee_id", ""),
            "expected_version": version,
        }, recovery, f"{key}-assign-v{version}", also=("version_conflict",))
        if step is not None:
            return step
        if recovery != "fresh_key":
            return finish()  # never notify about an assignment that did not hold
    if recovery == "read_back" and state.assigned and not state.assigned_seen:
        return ToolRequest("get_ticket", {"ticket_id": tid})
    if state.notification is None:
        step = _write(sections, done, "notify_customer", {
            "customer_id": req.get("customer_id", ""), "ticket_id": tid,
            "message": req.get("message", ""),
        }, recovery, f"{key}-notify")
        if step is not None:
            return step
    return finish()


# --------------------------------------------------------------------------- review


def _line(text: str, prefix: str) -> str:
    for line in text.splitlines():
        if line.strip().startswith(prefix):
            return line.strip()[len(prefix):].strip()
    return ""


def contract_problems(sections: Sequence[Section]) -> list[str]:
    text = c.clean_draft(c.draft(sections))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    problems: list[str] = []
    if [ln.split(":", 1)[0] + ":" for ln in lines] != list(PREFIXES):
        problems.append(f"the report must be exactly the lines {', '.join(PREFIXES)} in order")
    limit = _LIMIT.search(c.body(sections, pf.CONTRACT))
    if limit and len(text) > int(limit.group(1)):
        problems.append(f"the report has {len(text)} characters, more than {limit.group(1)}")
    return problems


def review(sections: Sequence[Section]) -> list[Finding]:
    """What a careful reviewer sees in the TOOL LOG against the report (nothing without a
    TOOL LOG: a guardrail's prompt has only the task, the contract and the draft)."""
    if not c.has(sections, pf.TOOL_LOG):
        return []
    req = request(sections)
    log = [Answer(call.tool, call.arguments, _read(call.observation))
           for call in c.tool_log(sections)]
    report = c.clean_draft(c.draft(sections))
    findings: list[Finding] = []
    created = [str(a.result["ticket"].get("ticket_id")) for a in log
               if a.tool == "create_ticket" and a.ok and isinstance(a.result.get("ticket"), dict)]
    created = list(dict.fromkeys(created))
    if len(created) > 1:
        findings.append(Finding(
            f"create_ticket opened {created[0]} and {created[1]} for request "
            f"{req.get('request_key', '?')}: the request now has two tickets.",
            (created[0], created[1]), "the same request appears to have been opened twice"))
    for a in log:
        if a.code == "timeout" and a.tool in READS:
            findings.append(Finding(
                f"{a.tool} timed out and never answered; the report does not show what "
                f"{a.tool} would have found.",
                (a.tool, "timeout"), "a lookup never answered"))
            break
        if a.code == "timeout":
            findings.append(Finding(
                f"{a.tool} answered timeout ('the request timed out; its outcome is unknown'); "
                f"the report does not show that the {a.tool} effect was checked.",
                (a.tool, "timeout"), "a write's outcome was left unknown"))
            break
    limited = [a for a in log if a.code == "rate_limited"]
    assigned_ok = any(a.tool == "assign_ticket" and a.ok for a in log)
    notified = any(a.tool == "notify_customer" and a.ok for a in log)
    if limited:
        first = limited[0]
        findings.append(Finding(
            f"{first.tool} answered rate_limited (retry_after_ms {first.retry_after}); "
            "the retry must wait that long.",
            (first.tool, "rate_limited"), "a call was refused and retried"))
    if notified and not assigned_ok:
        findings.append(Finding(
            "notify_customer succeeded although no assign_ticket call succeeded: the customer "
            "was notified before the assignment held.",
            ("notify_customer", "assign_ticket"), "the order of the effects is wrong"))
    for a in log:
        tid = str(a.arguments.get("ticket_id", ""))
        if a.tool == "get_ticket" and a.code == "not_found" and tid in created:
            findings.append(Finding(
                f"get_ticket answered not_found for {tid}, which create_ticket had just "
                "opened: that read was not current.",
                (tid, "not_found"), "a read contradicted an earlier write"))
            break
    said = _line(report, "ASSIGNED:")
    if said and said != "none" and not assigned_ok and not any(
            a.tool == "get_ticket" and a.ok and a.result.get("ticket", {}).get("assignee_id")
            == said for a in log):
        findings.append(Finding(
            f"the report says ASSIGNED: {said} but no tool answer shows that assignment.",
            (said,), "the report claims an effect the tools do not show"))
    return findings


def looks_like_artifact(text: str) -> bool:
    return "TICKET:" in text and "NOTES:" in text
