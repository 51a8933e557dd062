"""Scenario files: one lab experiment as data (YAML, validated by these models).

A scenario names the world (seed and fixtures), the public task the agent receives, the
tools' idempotency contracts, the fault schedule, what the effects must add up to, and
the run's deadline and budget. The JSON Schema is published as
``schemas/lab-scenario.schema.json``; :func:`pytest_sabot.lab.scenario_load.load_scenario`
adds the cross-reference checks a schema cannot express.

Only ``task`` and the tool contracts ever reach an agent; everything else is private to
the harness.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.lab.faults import FaultEntry
from pytest_sabot.lab.vocabulary import IdempotencySupport, Priority, ToolName

SCENARIO_FORMAT_VERSION: Literal[1] = 1


def _urgent_only() -> list[Priority]:
    return ["urgent"]


def _every_tool() -> list[ToolName]:
    return list(get_args(ToolName))


# --------------------------------------------------------------------------- world


class CustomerSpec(FrozenModel):
    """A customer the scenario needs by name (more are generated from the seed)."""

    customer_id: str = Field(pattern=r"^C-\d{1,6}$", description="Id such as 'C-104'.")
    name: str = Field(min_length=1, description="Display name.")
    email: str = Field(
        pattern=r"^[^@\s]+@[^@\s]+\.invalid$",
        description="Notification address; must end in .invalid (nothing is ever sent).",
    )


class AssigneeSpec(FrozenModel):
    """A support engineer tickets can be assigned to."""

    assignee_id: str = Field(pattern=r"^A-\d{1,6}$", description="Id such as 'A-7'.")
    name: str = Field(min_length=1, description="Display name.")
    team: str = Field(min_length=1, description="Team name.")


class TicketRevision(FrozenModel):
    """One committed change to an existing ticket before the run starts."""

    subject: str | None = Field(None, description="New subject, if it changed.")
    priority: Priority | None = Field(None, description="New priority, if it changed.")
    assignee_id: str | None = Field(None, description="New assignee, if it changed.")


class ExistingTicket(FrozenModel):
    """A ticket that already exists when the run starts, with its committed history."""

    request_key: str = Field(min_length=1, description="Business request key.")
    customer_id: str = Field(description="The customer it is for (a listed customer).")
    subject: str = Field(min_length=1, description="Subject at creation.")
    priority: Priority = Field("normal", description="Priority at creation.")
    assignee_id: str | None = Field(None, description="Assignee at creation, if any.")
    revisions: list[TicketRevision] = Field(
        default_factory=list,
        description="Later committed changes, oldest first; each raises the version by one "
        "and leaves an earlier snapshot a stale read can serve.",
    )


class ApprovalRule(FrozenModel):
    """Which tickets need approval before assignment, and when the approver grants it."""

    priorities: list[Priority] = Field(
        default_factory=_urgent_only,
        description="Tickets created with one of these priorities start 'pending'.",
    )
    delay_ms: int = Field(
        2000, ge=0, description="Virtual ms after creation at which the approver approves."
    )


class WorldSpec(FrozenModel):
    """The simulated helpdesk: fixtures plus a seeded background."""

    seed: int = Field(description="Seed of everything generated (ids, background entities).")
    customers: list[CustomerSpec] = Field(min_length=1, description="Named customers.")
    assignees: list[AssigneeSpec] = Field(min_length=1, description="Named assignees.")
    existing_tickets: list[ExistingTicket] = Field(
        default_factory=list, description="Tickets that exist before the run."
    )
    background_customers: int = Field(
        4, ge=0, le=50, description="How many more customers the seed generates."
    )
    background_tickets: int = Field(
        6, ge=0, le=100,
        description="How many unrelated tickets the seed generates (they must stay untouched).",
    )
    approval: ApprovalRule = Field(
        default_factory=ApprovalRule, description="The approval rule."
    )
    latency_ms: int = Field(40, ge=0, description="Virtual ms one answered call takes.")
    timeout_ms: int = Field(
        30000, ge=1, description="Virtual ms before a lost call is reported as a timeout."
    )


# --------------------------------------------------------------------------- task


class PublicTask(FrozenModel):
    """The request the agent receives: the only scenario text an agent ever sees."""

    instructions: str = Field(min_length=1, description="The request in plain words.")
    request_key: str = Field(min_length=1, description="Business key of the request.")
    customer_id: str = Field(description="The customer the request is for.")
    subject: str = Field(min_length=1, description="Subject for the ticket.")
    priority: Priority = Field("normal", description="Priority the ticket must have.")
    assignee_id: str = Field(description="Who the ticket must be assigned to.")
    message: str = Field(min_length=1, description="What to tell the customer.")

    def __getitem__(self, field: str) -> Any:
        """A field by name (``task["customer_id"]``), for agents that read the task as a
        mapping; KeyError for a name the public task does not have."""
        if field not in type(self).model_fields:
            raise KeyError(field)
        return getattr(self, field)


class TaskSpec(PublicTask):
    """The public task plus the tools the agent may use."""

    capabilities: list[ToolName] = Field(
        default_factory=_every_tool,
        description="Tools the agent may call; a call to any other is refused (forbidden).",
    )

    def public(self) -> PublicTask:
        return PublicTask.model_validate(self.model_dump(exclude={"capabilities"}))


# --------------------------------------------------------------------------- contracts


class WriteContract(FrozenModel):
    """The published contract choice of one write tool."""

    idempotency: IdempotencySupport = Field(
        "supported",
        description="'supported': an operation_key makes a retry safe; 'unsupported': the "
        "tool takes no key and every delivery may write.",
    )


class Contracts(FrozenModel):
    """Idempotency contract of each write tool."""

    create_ticket: WriteContract = Field(default_factory=WriteContract, description="create.")
    assign_ticket: WriteContract = Field(default_factory=WriteContract, description="assign.")
    notify_customer: WriteContract = Field(
        default_factory=WriteContract, description="notify."
    )

    def support(self, tool: str) -> IdempotencySupport | None:
        contract = getattr(self, tool, None)
        return contract.idempotency if isinstance(contract, WriteContract) else None


# --------------------------------------------------------------------------- grading, limits


class Expectations(FrozenModel):
    """What the committed effects must add up to (private; never shown to the agent)."""

    tickets: int = Field(1, ge=0, description="Exact number of tickets for the request key.")
    notifications: int = Field(
        1, ge=0, description="Exact number of notifications to the customer about them."
    )


class Limits(FrozenModel):
    """When the run stops even if the agent does not."""

    deadline_ms: int = Field(600_000, ge=1, description="Virtual-time deadline.")
    max_tool_calls: int = Field(60, ge=1, description="Budget of routed tool calls.")


class Scenario(FrozenModel):
    """One lab scenario file."""

    format_version: Literal[1] = Field(
        SCENARIO_FORMAT_VERSION, description="Scenario file format version."
    )
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Scenario name.")
    description: str = Field("", description="What the scenario tests, for people.")
    world: WorldSpec = Field(description="The simulated helpdesk.")
    task: TaskSpec = Field(description="The public request and the agent's capabilities.")
    contracts: Contracts = Field(
        default_factory=Contracts, description="Idempotency contracts of the write tools."
    )
    faults: list[FaultEntry] = Field(
        default_factory=list, description="The fault schedule (may be empty: a control run)."
    )
    expect: Expectations = Field(
        default_factory=Expectations, description="Exact counts the completion rules check."
    )
    limits: Limits = Field(default_factory=Limits, description="Deadline and budget.")
