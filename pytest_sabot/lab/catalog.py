"""The published tool contracts: arguments, results, typed errors and idempotency.

The catalog is what an agent is told about the world's tools, and the world validates
every delivery against the same argument models, so the contract and the behaviour
cannot drift. Idempotency is explicit per write tool: ``supported`` (an ``operation_key``
makes a retry of the same call return the first result without a second write) or
``unsupported`` (no key is accepted; every delivery may write). Business request keys are
never unique constraints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.lab.scenario import Contracts
from pytest_sabot.lab.vocabulary import (
    ALL_TOOLS,
    WRITE_TOOLS,
    ApprovalState,
    ErrorCode,
    Priority,
    TicketStatus,
)

KEY = "operation_key"


class GetCustomerArgs(FrozenModel):
    """Arguments of get_customer."""

    customer_id: str = Field(description="The customer to look up.")


class FindTicketsArgs(FrozenModel):
    """Arguments of find_tickets (at least one filter)."""

    request_key: str | None = Field(None, description="Only tickets with this request key.")
    customer_id: str | None = Field(None, description="Only tickets of this customer.")

    @model_validator(mode="after")
    def _one_filter(self) -> FindTicketsArgs:
        if self.request_key is None and self.customer_id is None:
            raise ValueError("give request_key or customer_id")
        return self


class GetTicketArgs(FrozenModel):
    """Arguments of get_ticket."""

    ticket_id: str = Field(description="The ticket to read.")


class CreateTicketArgs(FrozenModel):
    """Arguments of create_ticket."""

    customer_id: str = Field(description="The customer the ticket is for.")
    request_key: str = Field(min_length=1, description="Business request key (not unique).")
    subject: str = Field(min_length=1, description="One-line subject.")
    priority: Priority = Field("normal", description="low, normal, high or urgent.")
    operation_key: str | None = Field(
        None, min_length=1, description="Idempotency key (only when supported)."
    )


class AssignTicketArgs(FrozenModel):
    """Arguments of assign_ticket."""

    ticket_id: str = Field(description="The ticket to assign.")
    assignee_id: str = Field(description="Who to assign it to.")
    expected_version: int = Field(
        ge=1, description="The ticket version the caller last read; another is a conflict."
    )
    operation_key: str | None = Field(
        None, min_length=1, description="Idempotency key (only when supported)."
    )


class NotifyCustomerArgs(FrozenModel):
    """Arguments of notify_customer."""

    customer_id: str = Field(description="Recipient customer.")
    ticket_id: str = Field(description="The ticket the message is about.")
    message: str = Field(min_length=1, description="Message body.")
    operation_key: str | None = Field(
        None, min_length=1, description="Idempotency key (only when supported)."
    )


ARGUMENTS: dict[str, type[FrozenModel]] = {
    "get_customer": GetCustomerArgs,
    "find_tickets": FindTicketsArgs,
    "get_ticket": GetTicketArgs,
    "create_ticket": CreateTicketArgs,
    "assign_ticket": AssignTicketArgs,
    "notify_customer": NotifyCustomerArgs,
}


class CustomerView(FrozenModel):
    """A customer as tools show it."""

    customer_id: str = Field(description="Customer id.")
    name: str = Field(description="Display name.")
    email: str = Field(description="Notification address.")


class TicketView(FrozenModel):
    """A ticket as tools show it."""

    ticket_id: str = Field(description="Ticket id.")
    customer_id: str = Field(description="Customer id.")
    request_key: str = Field(description="Business request key.")
    subject: str = Field(description="Subject.")
    priority: Priority = Field(description="Priority.")
    status: TicketStatus = Field(description="'open' or 'assigned'.")
    assignee_id: str | None = Field(description="Current assignee or null.")
    approval: ApprovalState = Field(description="'not_required', 'pending' or 'approved'.")
    version: int = Field(description="Entity version; pass it as expected_version.")


class NotificationView(FrozenModel):
    """A queued notification as tools show it."""

    notification_id: str = Field(description="Notification id.")
    customer_id: str = Field(description="Recipient customer.")
    ticket_id: str = Field(description="The ticket it is about.")
    message: str = Field(description="Message body.")


class CustomerResult(FrozenModel):
    """Result of get_customer."""

    customer: CustomerView = Field(description="The customer.")


class TicketListResult(FrozenModel):
    """Result of find_tickets."""

    tickets: list[TicketView] = Field(description="Matching tickets, oldest first.")


class TicketResult(FrozenModel):
    """Result of get_ticket, create_ticket and assign_ticket."""

    ticket: TicketView = Field(description="The ticket after the call.")


class NotificationResult(FrozenModel):
    """Result of notify_customer."""

    notification: NotificationView = Field(description="The queued notification.")


RESULTS: dict[str, type[FrozenModel]] = {
    "get_customer": CustomerResult,
    "find_tickets": TicketListResult,
    "get_ticket": TicketResult,
    "create_ticket": TicketResult,
    "assign_ticket": TicketResult,
    "notify_customer": NotificationResult,
}

DESCRIPTIONS: dict[str, str] = {
    "get_customer": "Look up one customer by id.",
    "find_tickets": "List tickets by request key and/or customer.",
    "get_ticket": "Read one ticket, including its version and approval state.",
    "create_ticket": "Open a ticket for a customer's request. Request keys are not unique: "
    "creating twice makes two tickets.",
    "assign_ticket": "Assign a ticket. expected_version must equal the ticket's current "
    "version, otherwise the call is refused with version_conflict and nothing changes. "
    "A ticket whose approval is 'pending' must not be assigned before it is 'approved'.",
    "notify_customer": "Queue a message to a customer about a ticket.",
}

_COMMON: list[tuple[ErrorCode, str]] = [
    ("invalid_arguments", "an argument is missing, unknown or of the wrong type"),
    ("timeout", "no answer in time; the call may or may not have taken effect"),
    ("rate_limited", "too many calls; wait retry_after_ms (virtual) before retrying"),
    ("forbidden", "the tool is not among the caller's capabilities"),
]
_ERRORS: dict[str, list[tuple[ErrorCode, str]]] = {
    "get_customer": [("not_found", "no such customer")],
    "find_tickets": [],
    "get_ticket": [("not_found", "no such ticket")],
    "create_ticket": [("not_found", "no such customer")],
    "assign_ticket": [
        ("not_found", "no such ticket or assignee"),
        ("version_conflict", "expected_version is not the ticket's current version"),
    ],
    "notify_customer": [("not_found", "no such customer or ticket")],
}
_KEY_REUSE: tuple[ErrorCode, str] = (
    "idempotency_key_reuse", "the operation_key was used before with other arguments"
)


class ErrorContract(FrozenModel):
    """One typed error a tool may return."""

    code: ErrorCode = Field(description="The error code.")
    when: str = Field(description="When it is returned.")


class IdempotencyContract(FrozenModel):
    """Whether repeating a call is safe, and how."""

    support: Literal["supported", "unsupported", "read_only"] = Field(
        description="'supported': keyed retries are safe; 'unsupported': every delivery "
        "may write; 'read_only': the tool never writes."
    )
    key_argument: str | None = Field(
        None, description="The argument carrying the operation key, when supported."
    )
    semantics: str = Field(description="The contract in words.")


class ToolContract(FrozenModel):
    """The published contract of one tool."""

    name: str = Field(description="Tool name.")
    description: str = Field(description="What the tool does.")
    effect: Literal["read", "write"] = Field(description="Whether it can change state.")
    arguments: dict[str, Any] = Field(description="JSON Schema of the arguments object.")
    result: dict[str, Any] = Field(description="JSON Schema of the result object.")
    errors: list[ErrorContract] = Field(description="Typed errors it may return.")
    idempotency: IdempotencyContract = Field(description="Its idempotency contract.")


def _idempotency(tool: str, contracts: Contracts) -> IdempotencyContract:
    support = contracts.support(tool)
    if support is None:
        return IdempotencyContract(support="read_only", semantics="Reads never write; "
                                   "repeating one is always safe.")
    if support == "supported":
        return IdempotencyContract(
            support="supported", key_argument=KEY,
            semantics="A call repeated with the same operation_key and the same other "
            "arguments returns the first call's result and writes nothing more; the same key "
            "with different arguments is refused with idempotency_key_reuse.",
        )
    return IdempotencyContract(
        support="unsupported",
        semantics="No operation key is accepted. Every delivered call may write; after a "
        "timeout, read the state back before repeating the call.",
    )


def arguments_schema(tool: str, contracts: Contracts) -> dict[str, Any]:
    schema = ARGUMENTS[tool].model_json_schema()
    if contracts.support(tool) == "unsupported":
        schema["properties"].pop(KEY, None)
    return schema


def tool_contract(tool: str, contracts: Contracts) -> ToolContract:
    errors = list(_ERRORS[tool]) + _COMMON
    if contracts.support(tool) == "supported":
        errors.append(_KEY_REUSE)
    return ToolContract(
        name=tool,
        description=DESCRIPTIONS[tool],
        effect="write" if tool in WRITE_TOOLS else "read",
        arguments=arguments_schema(tool, contracts),
        result=RESULTS[tool].model_json_schema(),
        errors=[ErrorContract(code=c, when=w) for c, w in errors],
        idempotency=_idempotency(tool, contracts),
    )


def build_catalog(contracts: Contracts, tools: Sequence[str] | None = None) -> (
        list[ToolContract]):
    """The contracts of ``tools`` (default: all six), in catalog order."""
    wanted = set(tools) if tools is not None else set(ALL_TOOLS)
    return [tool_contract(t, contracts) for t in ALL_TOOLS if t in wanted]


def parse_arguments(tool: str, arguments: dict[str, Any], contracts: Contracts) -> (
        FrozenModel | str):
    """The validated arguments, or the invalid_arguments message the caller is shown."""
    try:
        parsed = ARGUMENTS[tool].model_validate(arguments)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
        return f"{tool}: {where}: {first.get('msg', 'invalid')}"
    if contracts.support(tool) == "unsupported" and getattr(parsed, KEY, None) is not None:
        return f"{tool}: operation_key: not accepted (idempotency unsupported)"
    return parsed
