"""Building the world from its spec: the same seed always gives the same helpdesk.

The seed draws the id ranges, the background customers and the unrelated background
tickets (some for the task's own customer, so "leave unrelated tickets alone" is a real
test). The scenario's existing tickets are then committed one change at a time before the
run starts, so each earlier version is a real committed snapshot.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from pytest_sabot.lab.scenario import WorldSpec
from pytest_sabot.lab.world.entities import Assignee, Customer, Ticket, WorldState
from pytest_sabot.lab.world.tools import approvals_due, new_ticket, revise_ticket

_FIRST = ("Ada", "Bruno", "Chiara", "Dev", "Elif", "Fynn", "Greta", "Hiro", "Ines", "Jonas",
          "Kaja", "Luis", "Maren", "Nils", "Oona", "Pavel", "Rhea", "Sven", "Tove", "Uma")
_LAST = ("Arendt", "Brandt", "Costa", "Duval", "Eklund", "Ferrer", "Gallo", "Haas", "Iqbal",
         "Jensen", "Kowal", "Lindqvist", "Moreau", "Novak", "Okafor", "Petrov", "Quinn")
_SUBJECTS = ("Invoice shows the wrong VAT rate", "Password reset mail never arrives",
             "Export to CSV drops the last row", "Cannot add a second admin",
             "Webhook retries flood our endpoint", "Dashboard times out after login",
             "Refund not visible on the statement", "SSO login loops back to the start")

PRELUDE_START_MS = -3_600_000
PRELUDE_STEP_MS = 60_000


@dataclass(frozen=True)
class Prelude:
    """Every committed state before the run, oldest first, with its virtual time."""

    states: tuple[WorldState, ...]
    times: tuple[int, ...]


def _background_customers(rng: random.Random, spec: WorldSpec) -> list[Customer]:
    taken = {c.customer_id for c in spec.customers}
    out: list[Customer] = []
    for number in rng.sample(range(100, 1000), spec.background_customers + len(taken)):
        cid = f"C-{number}"
        if cid in taken or len(out) == spec.background_customers:
            continue
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        out.append(Customer(customer_id=cid, name=f"{first} {last}",
                            email=f"{first}.{last}@{cid.lower()}.example.invalid".lower()))
    return out


def _request_key(rng: random.Random, taken: set[str]) -> str:
    while True:
        key = f"REQ-{rng.randrange(1000, 10000)}"
        if key not in taken:
            taken.add(key)
            return key


def build_world(spec: WorldSpec, reserved_keys: set[str]) -> Prelude:
    """All committed states before the run; ``reserved_keys`` are never drawn for
    background tickets (the task's own request key)."""
    rng = random.Random(spec.seed)
    customers = [Customer(**c.model_dump()) for c in spec.customers]
    customers += _background_customers(rng, spec)
    assignees = [Assignee(**a.model_dump()) for a in spec.assignees]
    taken = set(reserved_keys) | {t.request_key for t in spec.existing_tickets}
    first_ticket = rng.randrange(1000, 9000)
    tickets: dict[str, Ticket] = {}
    for i in range(spec.background_tickets):
        assignee = rng.choice(assignees).assignee_id if rng.random() < 0.5 else None
        ticket = Ticket(
            ticket_id=f"T-{first_ticket + i}",
            customer_id=rng.choice(customers).customer_id,
            request_key=_request_key(rng, taken),
            subject=rng.choice(_SUBJECTS),
            priority=rng.choice(("low", "normal", "high")),
            status="assigned" if assignee else "open",
            assignee_id=assignee,
            approval="not_required",
            version=1 + (assignee is not None),
            created_at_ms=-rng.randrange(2, 40) * 86_400_000,
        )
        tickets[ticket.ticket_id] = ticket
    state = WorldState(
        customers={c.customer_id: c for c in customers},
        assignees={a.assignee_id: a for a in assignees},
        tickets=tickets,
        next_ticket=first_ticket + spec.background_tickets,
        next_notification=rng.randrange(3000, 9000),
    )
    states, times = [state], [PRELUDE_START_MS]
    now = PRELUDE_START_MS
    for existing in spec.existing_tickets:
        now += PRELUDE_STEP_MS
        state, ticket = new_ticket(state, customer_id=existing.customer_id,
                                   request_key=existing.request_key, subject=existing.subject,
                                   priority=existing.priority,
                                   assignee_id=existing.assignee_id, now_ms=now,
                                   rule=spec.approval)
        states.append(state)
        times.append(now)
        for revision in existing.revisions:
            now += PRELUDE_STEP_MS
            for at, approved, _ in approvals_due(state, now):
                states.append(approved)
                times.append(at)
                state = approved
            ticket = state.tickets[ticket.ticket_id]
            state, ticket = revise_ticket(state, ticket,
                                          **revision.model_dump(exclude_none=True))
            states.append(state)
            times.append(now)
    for at, approved, _ in approvals_due(state, 0):
        states.append(approved)
        times.append(at)
        state = approved
    return Prelude(states=tuple(states), times=tuple(times))
