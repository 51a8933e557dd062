"""Completion rules: did the committed effects add up to what the task asked?

LC1 exact ticket count for the request key, LC2 exact notification count to the
requesting customer about the request's ticket, LC3 the requested assignment holds at the
end. They are judged only when execution completed (docs/LAB.md).
"""

from __future__ import annotations

from pytest_sabot.lab.evidence import chains, ref
from pytest_sabot.lab.record import Violation
from pytest_sabot.lab.rules.history import History


def lc1_ticket_count(history: History) -> list[Violation]:
    tickets = history.request_tickets()
    want = history.expect.tickets
    if len(tickets) == want:
        return []
    made = [e for e, t in history.creations() if t.request_key == history.task.request_key]
    return [Violation(
        rule="LC1", kind="completion",
        message=f"{len(tickets)} ticket(s) carry {history.task.request_key}; expected {want}",
        evidence=chains(history.streams, made),
    )]


def lc2_notification_count(history: History) -> list[Violation]:
    ids = {t.ticket_id for t in history.request_tickets()}
    sent = [e for e, n in history.notifications()
            if n.ticket_id in ids and n.customer_id == history.task.customer_id]
    want = history.expect.notifications
    if len(sent) == want:
        return []
    return [Violation(
        rule="LC2", kind="completion",
        message=f"{len(sent)} notification(s) to {history.task.customer_id} about the "
        f"request's ticket; expected {want}",
        evidence=chains(history.streams, sent),
    )]


def lc3_requested_assignment(history: History) -> list[Violation]:
    if history.expect.tickets == 0:
        return []
    who = history.task.assignee_id
    tickets = history.request_tickets()
    if any(t.assignee_id == who for t in tickets):
        return []
    attempts = [r for r in history.streams.requests if r.tool == "assign_ticket"]
    evidence = [ref(r) for r in attempts]
    for r in attempts:
        shown = history.streams.observation_of(r.request_id)
        if shown is not None:
            evidence.append(ref(shown))
    state = ", ".join(f"{t.ticket_id} -> {t.assignee_id}" for t in tickets) or "no ticket"
    return [Violation(
        rule="LC3", kind="completion",
        message=f"no ticket of the request is assigned to {who} at the end ({state})",
        evidence=sorted(evidence, key=lambda r: r.seq),
    )]


COMPLETION_RULES = (lc1_ticket_count, lc2_notification_count, lc3_requested_assignment)
