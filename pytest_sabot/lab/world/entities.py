"""The helpdesk's entities and one immutable world state.

A ``WorldState`` is never changed in place: every committed write produces a new state,
so earlier committed snapshots stay real and can be served by a stale read (O11).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.lab.vocabulary import ApprovalState, Priority, TicketStatus

# Fields a write tool's arguments set on the entity it creates, declared once for both.
ForCustomer = Annotated[str, Field(description="The customer the ticket is for.")]
Subject = Annotated[str, Field(description="One-line subject.")]
TicketPriority = Annotated[Priority, Field(description="low, normal, high or urgent.")]
Recipient = Annotated[str, Field(description="Recipient customer.")]
AboutTicket = Annotated[str, Field(description="The ticket the message is about.")]
MessageBody = Annotated[str, Field(description="Message body.")]


class Customer(FrozenModel):
    """A customer of the helpdesk."""

    customer_id: str = Field(description="Stable id, e.g. 'C-104'.")
    name: str = Field(description="Display name.")
    email: str = Field(description="Address notifications go to (always a .invalid domain).")


class Assignee(FrozenModel):
    """A support engineer a ticket can be assigned to."""

    assignee_id: str = Field(description="Stable id, e.g. 'A-7'.")
    name: str = Field(description="Display name.")
    team: str = Field(description="Team the engineer belongs to.")


class Ticket(FrozenModel):
    """A support ticket; every committed change raises ``version`` by one."""

    ticket_id: str = Field(description="Stable id, e.g. 'T-4821'.")
    customer_id: ForCustomer
    request_key: str = Field(
        description="Business request key; deliberately not unique, so duplicates can exist."
    )
    subject: Subject
    priority: TicketPriority
    status: TicketStatus = Field(description="'open' until assigned, then 'assigned'.")
    assignee_id: str | None = Field(None, description="Current assignee, None when unassigned.")
    approval: ApprovalState = Field(
        description="'not_required', or 'pending' until the approver approves, then 'approved'."
    )
    version: int = Field(ge=1, description="Entity version: 1 at creation, +1 per change.")
    created_at_ms: int = Field(description="Virtual time of creation (negative: before the run).")


class Notification(FrozenModel):
    """A message placed in the notification outbox (nothing is ever sent anywhere)."""

    notification_id: str = Field(description="Stable id, e.g. 'N-3001'.")
    customer_id: Recipient
    ticket_id: AboutTicket
    message: MessageBody
    sent_at_ms: int = Field(description="Virtual time the message entered the outbox.")


class OperationRecord(FrozenModel):
    """The server's memory of one successful keyed write (the idempotency store)."""

    tool: str = Field(description="Write tool the key was used with.")
    operation_key: str = Field(description="The caller's operation key.")
    fingerprint: str = Field(description="sha256 of the call's other arguments.")
    result: dict[str, Any] = Field(description="The result returned the first time.")


class WorldState(FrozenModel):
    """Everything the helpdesk holds at one instant."""

    customers: dict[str, Customer] = Field(description="customer_id -> customer.")
    assignees: dict[str, Assignee] = Field(description="assignee_id -> assignee.")
    tickets: dict[str, Ticket] = Field(description="ticket_id -> ticket (never deleted).")
    outbox: dict[str, Notification] = Field(
        default_factory=dict, description="notification_id -> notification (never deleted)."
    )
    operations: dict[str, OperationRecord] = Field(
        default_factory=dict, description="'<tool>:<operation_key>' -> operation record."
    )
    approvals_due: dict[str, int] = Field(
        default_factory=dict,
        description="ticket_id -> virtual time at which the approver approves it.",
    )
    next_ticket: int = Field(description="Number of the next ticket id to hand out.")
    next_notification: int = Field(description="Number of the next notification id.")


# Harness-private fields: the world keeps them, no tool shows them.
TICKET_PRIVATE = frozenset({"created_at_ms"})
NOTIFICATION_PRIVATE = frozenset({"sent_at_ms"})


def ticket_view(ticket: Ticket) -> dict[str, Any]:
    """A ticket as tools show it (no harness-private fields)."""
    return ticket.model_dump(mode="json", exclude=set(TICKET_PRIVATE))


def customer_view(customer: Customer) -> dict[str, Any]:
    return customer.model_dump(mode="json")


def notification_view(notification: Notification) -> dict[str, Any]:
    return notification.model_dump(mode="json", exclude=set(NOTIFICATION_PRIVATE))
