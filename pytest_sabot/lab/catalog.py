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
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, create_model, model_validator

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.lab.scenario import Contracts
from pytest_sabot.lab.vocabulary import (
    ALL_TOOLS,
    WRITE_TOOLS,
    ErrorCode,
)
from pytest_sabot.lab.world.entities import (
    NOTIFICATION_PRIVATE,
    TICKET_PRIVATE,
    AboutTicket,
    Customer,
    ForCustomer,
    MessageBody,
    Notification,
    Recipient,
    Subject,
    Ticket,
    TicketPriority,
)

KEY = "operation_key"
# The idempotency key a write tool's arguments may carry (named KEY).
OperationKey = Annotated[
    str | None, Field(min_length=1, description="Idempotency key (only when supported).")
]


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

    customer_id: ForCustomer
    request_key: str = Field(min_length=1, description="Business request key (not unique).")
    subject: Subject = Field(min_length=1)
    priority: TicketPriority = "normal"
    operation_key: OperationKey = None


class AssignTicketArgs(FrozenModel):
    """Arguments of assign_ticket."""

    ticket_id: str = Field(description="The ticket to assign.")
    assignee_id: str = Field(description="Who to assign it to.")
    expected_version: int = Field(
        ge=1, description="The ticket version the caller last read; another is a conflict."
    )
    operation_key: OperationKey = None


class NotifyCustomerArgs(FrozenModel):
    """Arguments of notify_customer."""

    customer_id: Recipient
    ticket_id: AboutTicket
    message: MessageBody = Field(min_length=1)
    operation_key: OperationKey = None


ARGUMENTS: dict[str, type[FrozenModel]] = {
    "get_customer": GetCustomerArgs,
    "find_tickets": FindTicketsArgs,
    "get_ticket": GetTicketArgs,
    "create_ticket": CreateTicketArgs,
    "assign_ticket": AssignTicketArgs,
    "notify_customer": NotifyCustomerArgs,
}


def _model(name: str, doc: str, fields: dict[str, tuple[Any, str]]) -> type[FrozenModel]:
    """A record model called ``name``: each field of its type, with its description."""
    definitions: dict[str, Any] = {
        field: (annotation, Field(description=description))
        for field, (annotation, description) in fields.items()
    }
    return create_model(name, __base__=FrozenModel, __doc__=doc, __module__=__name__,
                        **definitions)


def tool_view(entity: type[FrozenModel], hidden: frozenset[str], doc: str,
              descriptions: dict[str, str]) -> type[FrozenModel]:
    """``entity`` as tools show it: its fields but the ``hidden`` ones, in its order and of
    its types, each described as agents read it (``descriptions`` names exactly the shown
    fields). Every shown field is required: a result always carries it, null included."""
    shown = [name for name in entity.model_fields if name not in hidden]
    if sorted(shown) != sorted(descriptions):
        raise ValueError(f"{entity.__name__}: describe exactly {shown}")
    return _model(f"{entity.__name__}View", doc, {
        name: (entity.model_fields[name].annotation, descriptions[name]) for name in shown
    })


CustomerView = tool_view(Customer, frozenset(), "A customer as tools show it.", {
    "customer_id": "Customer id.",
    "name": "Display name.",
    "email": "Notification address.",
})
TicketView = tool_view(Ticket, TICKET_PRIVATE, "A ticket as tools show it.", {
    "ticket_id": "Ticket id.",
    "customer_id": "Customer id.",
    "request_key": "Business request key.",
    "subject": "Subject.",
    "priority": "Priority.",
    "status": "'open' or 'assigned'.",
    "assignee_id": "Current assignee or null.",
    "approval": "'not_required', 'pending' or 'approved'.",
    "version": "Entity version; pass it as expected_version.",
})
NotificationView = tool_view(
    Notification, NOTIFICATION_PRIVATE, "A queued notification as tools show it.", {
        "notification_id": "Notification id.",
        "customer_id": "Recipient customer.",
        "ticket_id": "The ticket it is about.",
        "message": "Message body.",
    })

CustomerResult = _model("CustomerResult", "Result of get_customer.", {
    "customer": (CustomerView, "The customer."),
})
TicketListResult = _model("TicketListResult", "Result of find_tickets.", {
    "tickets": (list[TicketView],  # type: ignore[valid-type]  # a model built at import
                "Matching tickets, oldest first."),
})
TicketResult = _model("TicketResult", "Result of get_ticket, create_ticket and assign_ticket.", {
    "ticket": (TicketView, "The ticket after the call."),
})
NotificationResult = _model("NotificationResult", "Result of notify_customer.", {
    "notification": (NotificationView, "The queued notification."),
})


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
