"""The tool handlers: pure functions from (state, call) to (answer, new state, changes).

Nothing here records evidence or knows about faults; the boundary numbers the changes
and writes them into the streams. The server deliberately enforces only what its
published contracts say: request keys are not unique, an assignment before approval is
accepted, a notification's recipient is not checked against the ticket. The lab's rules,
not the server, judge those.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from pytest_sabot.lab.catalog import (
    KEY,
    AssignTicketArgs,
    CreateTicketArgs,
    FindTicketsArgs,
    GetCustomerArgs,
    GetTicketArgs,
    NotifyCustomerArgs,
    parse_arguments,
)
from pytest_sabot.lab.observation import Observation, failure, success
from pytest_sabot.lab.scenario import ApprovalRule, Contracts
from pytest_sabot.lab.vocabulary import WRITE_TOOLS, EffectKind
from pytest_sabot.lab.world.entities import (
    Notification,
    OperationRecord,
    Ticket,
    WorldState,
    customer_view,
    notification_view,
    ticket_view,
)


@dataclass(frozen=True)
class Change:
    """One committed change, before the boundary gives it an effect id."""

    kind: EffectKind
    entity: str
    before: dict[str, Any] | None
    after: dict[str, Any]
    before_version: int | None = None
    after_version: int | None = None
    operation_key: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What one delivery did: the answer, the state after it, what was committed."""

    response: Observation
    state: WorldState
    changes: tuple[Change, ...] = field(default=())
    replayed: bool = False


def fingerprint(arguments: dict[str, Any]) -> str:
    """sha256 of the arguments other than the operation key."""
    rest = {k: v for k, v in arguments.items() if k != KEY and v is not None}
    return hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()


# --------------------------------------------------------------------------- reads


def read(state: WorldState, tool: str, arguments: dict[str, Any], contracts: Contracts) -> (
        Observation):
    """Answer a read tool from ``state`` (pure; also used on earlier snapshots)."""
    args = parse_arguments(tool, arguments, contracts)
    if isinstance(args, str):
        return failure(tool, "invalid_arguments", args)
    if isinstance(args, GetCustomerArgs):
        customer = state.customers.get(args.customer_id)
        if customer is None:
            return failure(tool, "not_found", f"no customer {args.customer_id}")
        return success(tool, {"customer": customer_view(customer)})
    if isinstance(args, GetTicketArgs):
        ticket = state.tickets.get(args.ticket_id)
        if ticket is None:
            return failure(tool, "not_found", f"no ticket {args.ticket_id}")
        return success(tool, {"ticket": ticket_view(ticket)})
    assert isinstance(args, FindTicketsArgs), tool
    found = [
        t for t in state.tickets.values()
        if args.request_key in (None, t.request_key) and args.customer_id in (None, t.customer_id)
    ]
    found.sort(key=lambda t: (t.created_at_ms, t.ticket_id))
    return success(tool, {"tickets": [ticket_view(t) for t in found]})


# --------------------------------------------------------------------------- writes


def _ticket_change(kind: EffectKind, before: Ticket | None, after: Ticket,
                   key: str | None) -> Change:
    return Change(
        kind=kind,
        entity=f"ticket:{after.ticket_id}",
        before=before.model_dump(mode="json") if before is not None else None,
        after=after.model_dump(mode="json"),
        before_version=before.version if before is not None else None,
        after_version=after.version,
        operation_key=key,
    )


def new_ticket(state: WorldState, *, customer_id: str, request_key: str, subject: str,
               priority: str, assignee_id: str | None, now_ms: int,
               rule: ApprovalRule) -> tuple[WorldState, Ticket]:
    """Insert a ticket (version 1); one needing approval starts pending with a due time."""
    needs_approval = priority in rule.priorities
    ticket = Ticket.model_validate({
        "ticket_id": f"T-{state.next_ticket}",
        "customer_id": customer_id,
        "request_key": request_key,
        "subject": subject,
        "priority": priority,
        "status": "assigned" if assignee_id else "open",
        "assignee_id": assignee_id,
        "approval": "pending" if needs_approval else "not_required",
        "version": 1,
        "created_at_ms": now_ms,
    })
    due = dict(state.approvals_due)
    if needs_approval:
        due[ticket.ticket_id] = now_ms + rule.delay_ms
    return state.model_copy(update={
        "tickets": {**state.tickets, ticket.ticket_id: ticket},
        "next_ticket": state.next_ticket + 1,
        "approvals_due": due,
    }), ticket


def revise_ticket(state: WorldState, ticket: Ticket, **changes: Any) -> tuple[WorldState, Ticket]:
    """Commit field changes to a ticket, raising its version by one."""
    if "assignee_id" in changes:
        changes["status"] = "assigned" if changes["assignee_id"] else "open"
    after = ticket.model_copy(update={**changes, "version": ticket.version + 1})
    return state.model_copy(update={"tickets": {**state.tickets, after.ticket_id: after}}), after


def _create(state: WorldState, args: CreateTicketArgs, now_ms: int, rule: ApprovalRule) -> (
        Outcome):
    if args.customer_id not in state.customers:
        return Outcome(failure("create_ticket", "not_found", f"no customer {args.customer_id}"),
                       state)
    state, ticket = new_ticket(state, customer_id=args.customer_id,
                               request_key=args.request_key, subject=args.subject,
                               priority=args.priority, assignee_id=None, now_ms=now_ms,
                               rule=rule)
    change = _ticket_change("ticket_created", None, ticket, args.operation_key)
    return Outcome(success("create_ticket", {"ticket": ticket_view(ticket)}), state, (change,))


def _assign(state: WorldState, args: AssignTicketArgs) -> Outcome:
    tool = "assign_ticket"
    ticket = state.tickets.get(args.ticket_id)
    if ticket is None:
        return Outcome(failure(tool, "not_found", f"no ticket {args.ticket_id}"), state)
    if args.assignee_id not in state.assignees:
        return Outcome(failure(tool, "not_found", f"no assignee {args.assignee_id}"), state)
    if args.expected_version != ticket.version:
        return Outcome(failure(tool, "version_conflict",
                               f"{args.ticket_id} is not at version {args.expected_version}; "
                               "read it again"), state)
    state, after = revise_ticket(state, ticket, assignee_id=args.assignee_id)
    change = _ticket_change("ticket_assigned", ticket, after, args.operation_key)
    return Outcome(success(tool, {"ticket": ticket_view(after)}), state, (change,))


def _notify(state: WorldState, args: NotifyCustomerArgs, now_ms: int) -> Outcome:
    tool = "notify_customer"
    if args.customer_id not in state.customers:
        return Outcome(failure(tool, "not_found", f"no customer {args.customer_id}"), state)
    if args.ticket_id not in state.tickets:
        return Outcome(failure(tool, "not_found", f"no ticket {args.ticket_id}"), state)
    note = Notification(notification_id=f"N-{state.next_notification}",
                        customer_id=args.customer_id, ticket_id=args.ticket_id,
                        message=args.message, sent_at_ms=now_ms)
    state = state.model_copy(update={
        "outbox": {**state.outbox, note.notification_id: note},
        "next_notification": state.next_notification + 1,
    })
    change = Change("notification_sent", f"notification:{note.notification_id}", None,
                    note.model_dump(mode="json"), operation_key=args.operation_key)
    return Outcome(success(tool, {"notification": notification_view(note)}), state, (change,))


def write(state: WorldState, tool: str, arguments: dict[str, Any], now_ms: int,
          contracts: Contracts, rule: ApprovalRule) -> Outcome:
    """Execute a write tool under its idempotency contract."""
    args = parse_arguments(tool, arguments, contracts)
    if isinstance(args, str):
        return Outcome(failure(tool, "invalid_arguments", args), state)
    key: str | None = getattr(args, KEY, None)
    digest = fingerprint(args.model_dump(mode="json"))
    if key is not None:
        known = state.operations.get(f"{tool}:{key}")
        if known is not None:
            if known.fingerprint != digest:
                return Outcome(failure(tool, "idempotency_key_reuse",
                                       f"operation_key {key!r} was used with other arguments"),
                               state)
            return Outcome(success(tool, known.result), state, replayed=True)
    if isinstance(args, CreateTicketArgs):
        outcome = _create(state, args, now_ms, rule)
    elif isinstance(args, AssignTicketArgs):
        outcome = _assign(state, args)
    else:
        assert isinstance(args, NotifyCustomerArgs), tool
        outcome = _notify(state, args, now_ms)
    if key is None or not outcome.changes or outcome.response.result is None:
        return outcome
    record = OperationRecord(tool=tool, operation_key=key, fingerprint=digest,
                             result=outcome.response.result)
    state = outcome.state.model_copy(
        update={"operations": {**outcome.state.operations, f"{tool}:{key}": record}}
    )
    return Outcome(outcome.response, state, outcome.changes)


def execute(state: WorldState, tool: str, arguments: dict[str, Any], now_ms: int,
            contracts: Contracts, rule: ApprovalRule) -> Outcome:
    """Execute any tool: reads leave the state as it is."""
    if tool in WRITE_TOOLS:
        return write(state, tool, arguments, now_ms, contracts, rule)
    return Outcome(read(state, tool, arguments, contracts), state)


def approvals_due(state: WorldState, now_ms: int) -> list[tuple[int, WorldState, Change]]:
    """The approver's work up to ``now_ms``: one (time, state after, change) per approval."""
    done: list[tuple[int, WorldState, Change]] = []
    for ticket_id, due in sorted(state.approvals_due.items(), key=lambda kv: (kv[1], kv[0])):
        if due > now_ms:
            break
        ticket = state.tickets[ticket_id]
        rest = {k: v for k, v in state.approvals_due.items() if k != ticket_id}
        state, after = revise_ticket(state, ticket, approval="approved")
        state = state.model_copy(update={"approvals_due": rest})
        done.append((due, state, _ticket_change("ticket_approved", ticket, after, None)))
    return done
