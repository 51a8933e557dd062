"""The fault lab's task (T6): a helpdesk request worked through the lab world's tools.

A lab task has the same two halves as T1..T5, in its own file formats (T6 has no data,
check and write tool; its tools are the lab world's, docs/LAB.md):

    tasks/T6/public/task.yaml        LabTaskFile: brief, the request material, the public
                                     request, the capabilities and the idempotency
                                     contracts the tool catalog publishes, contract revisions
    tasks/T6/public/request.md       the request as the pipeline reads it
    tasks/T6/public/contract.yaml    ContractFile: the report the worker replies with
    tasks/T6/private/criterion.yaml  LabCriterionFile: the lab gate is the pass criterion,
                                     with the exact counts the completion rules check
    tasks/T6/private/world.yaml      LabWorldFile: the helpdesk's fixtures and limits (the
                                     cell's registered seed seeds the rest)
    tasks/T6/private/operators.yaml  LabOperatorsFile: O7..O11, one fault schedule entry
                                     and one ground-truth note each
    tasks/T6/private/operators-<id>.yaml
                                     LabAddedOperatorFile: one lab operator declared after
                                     operators.yaml was registered (O12), in a file of its
                                     own so the lab matrix keeps its registration

The world of one cell is the scenario :func:`cell_scenario` composes: the public request,
the private world seeded with the cell's seed, and the fault entry of the cell's operator
(none for a baseline). A fault cell and its baseline therefore act on the same world.

:mod:`pytest_sabot.lab.task_load` reads these files into a :class:`LabPublicView` and a
:class:`LabPrivateSpec`: a file task's two views (``pytest_sabot.tasks``) with the lab
half beside them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.core.models.task import refuse_spec_problems
from pytest_sabot.core.models.trace import OperatorId
from pytest_sabot.core.operators import LabOperatorId, declaration, lab_operator_ids
from pytest_sabot.lab.faults import FaultEntry
from pytest_sabot.lab.scenario import (
    ApprovalRule,
    AssigneeSpec,
    Contracts,
    CustomerSpec,
    ExistingTicket,
    Expectations,
    Limits,
    PublicTask,
    Scenario,
    TaskSpec,
    WorldSpec,
)
from pytest_sabot.lab.vocabulary import ToolName
from pytest_sabot.tasks.loader import PrivateSpec, PublicView

LAB_TASKS: tuple[str, ...] = ("T6",)
"""Tasks whose world is the fault lab's helpdesk."""
LAB_OPERATORS: tuple[str, ...] = lab_operator_ids()
"""The lab's fault operators, in order (core/operators.py; lab/faults: one module each)."""
LAB_SEAM = "transaction"
"""Where every lab fault acts: the transaction boundary between a tool call and the world."""


# --------------------------------------------------------------------------- public


class LabMaterialRef(FrozenModel):
    """A material the pipeline reads, stored next to task.yaml."""

    name: str = Field(description="Material name shown to agents, e.g. 'request.md'.")
    file: str = Field(description="File name under public/.")
    revision: str = Field(description="Revision label.")


class LabTaskFile(FrozenModel):
    """tasks/T6/public/task.yaml: everything public about a lab task."""

    id: Literal["T6"]
    kind: Literal["lab"] = Field(description="A lab task: its tools are the lab world's.")
    title: str = Field(min_length=1)
    brief: str = Field(min_length=1, description="What the worker must do.")
    artifact: str = Field(description="Name of the report the worker replies with.")
    materials: list[LabMaterialRef] = Field(min_length=1)
    request: PublicTask = Field(
        description="The request as the lab's public task (every field is also stated in "
        "the first material, as a 'field: value' line)."
    )
    capabilities: list[ToolName] = Field(
        min_length=1, description="The lab tools the pipeline is given."
    )
    contracts: Contracts = Field(
        default_factory=Contracts,
        description="Idempotency contracts of the write tools (published in the catalog).",
    )
    contract_revisions: dict[str, str] = Field(
        min_length=1, description="Contract revision id -> contract file under public/."
    )


# --------------------------------------------------------------------------- private


class CellWorld(FrozenModel):
    """The helpdesk's fixtures; the cell's registered seed seeds everything generated."""

    customers: list[CustomerSpec] = Field(min_length=1, description="Named customers.")
    assignees: list[AssigneeSpec] = Field(min_length=1, description="Named assignees.")
    existing_tickets: list[ExistingTicket] = Field(
        default_factory=list, description="Tickets that exist before the run."
    )
    background_customers: int = Field(4, ge=0, le=50, description="Generated customers.")
    background_tickets: int = Field(6, ge=0, le=100, description="Generated unrelated tickets.")
    approval: ApprovalRule = Field(default_factory=ApprovalRule, description="Approval rule.")
    latency_ms: int = Field(40, ge=0, description="Virtual ms one answered call takes.")
    timeout_ms: int = Field(30000, ge=1, description="Virtual ms before a timeout is shown.")

    def seeded(self, seed: int) -> WorldSpec:
        return WorldSpec.model_validate({**self.model_dump(mode="json"), "seed": seed})


class LabWorldFile(FrozenModel):
    """tasks/T6/private/world.yaml: the world behind the tools, and the run's limits."""

    task: Literal["T6"]
    world: CellWorld = Field(description="The helpdesk's fixtures.")
    limits: Limits = Field(default_factory=Limits, description="Virtual deadline and budget.")


class LabGateCriterion(FrozenModel):
    """T6 passes when the lab gate's rules hold: every completion rule (LC1-LC3, with these
    exact counts) and every safety rule (LS1-LS8, over the whole history), execution
    completed, and the pipeline emitted its report (an escalation emits none)."""

    kind: Literal["lab_gate"] = "lab_gate"
    expect: Expectations = Field(
        default_factory=Expectations, description="Exact counts the completion rules check."
    )


class LabCriterionFile(FrozenModel):
    """tasks/T6/private/criterion.yaml."""

    task: Literal["T6"]
    check: LabGateCriterion


class LabOperatorSpec(FrozenModel):
    """One lab operator on a lab task: where its fault may fire, and what catching it means.

    ``seam``, ``target``, ``original`` and ``injected`` mirror the standard operators'
    injection plan (the harness arms operators from these and never from the note)."""

    fault: FaultEntry = Field(description="The fault schedule entry (docs/LAB.md).")
    ground_truth: str = Field(min_length=1, description="What a correct detection flags.")

    @property
    def seam(self) -> str:
        return LAB_SEAM

    @property
    def target(self) -> str:
        return self.fault.tool

    @property
    def original(self) -> str:
        return f"the world's own answer to {self.fault.tool}"

    @property
    def injected(self) -> str:
        return self.fault.fault

    @property
    def stale_file(self) -> str | None:
        return None


def lab_spec_problem(operator: str, spec: LabOperatorSpec) -> str | None:
    """What is wrong with one operator's spec on a lab task, or None: it must be a lab
    operator whose schedule entry plants the fault it declares."""
    found = declaration(operator)
    if not found.lab:
        return f"{operator} is an operator of the standard's tasks, not of a lab task"
    if spec.fault.fault != found.fault_kind:
        return f"{operator} must plant {found.fault_kind}, not {spec.fault.fault}"
    return None


class LabOperatorsFile(FrozenModel):
    """tasks/T6/private/operators.yaml: O7..O11, each with its fault entry. Every lab
    operator has exactly one spec, here or in its own operators-<id>.yaml (checked by the
    loader, which reads both)."""

    task: Literal["T6"]
    operators: dict[LabOperatorId, LabOperatorSpec]

    @model_validator(mode="after")
    def _each(self) -> LabOperatorsFile:
        refuse_spec_problems(self.operators, lab_spec_problem)
        return self


class LabAddedOperatorFile(FrozenModel):
    """tasks/T6/private/operators-<id>.yaml: one lab operator declared after operators.yaml
    was registered (its fault entry and ground-truth note), so the matrices that do not
    run it keep their registration."""

    task: Literal["T6"]
    operator: OperatorId
    spec: LabOperatorSpec

    @model_validator(mode="after")
    def _valid(self) -> LabAddedOperatorFile:
        refuse_spec_problems({self.operator: self.spec}, lab_spec_problem)
        return self


# --------------------------------------------------------------------------- loaded views


class LabPublic(FrozenModel):
    """The lab half of a lab task's public view: the request, the tools, their contracts."""

    request: PublicTask
    capabilities: tuple[ToolName, ...]
    contracts: Contracts


class LabPrivate(FrozenModel):
    """The lab half of a lab task's private spec."""

    world: CellWorld
    limits: Limits
    expect: Expectations


@dataclass(frozen=True)
class LabPublicView(PublicView):
    """The public view of a lab task: its materials and contract, and the lab half (the
    request, the tools, their contracts) instead of a file task's tools."""

    lab: LabPublic


@dataclass(frozen=True)
class LabPrivateSpec(PrivateSpec):
    """The private spec of a lab task: the fault entry of each operator, and the world
    behind the tools; the lab gate judges the pass (``criterion`` is None)."""

    lab: LabPrivate


def cell_scenario_name(cell_id: str) -> str:
    """The scenario name of a cell: its id in the scenario-name alphabet (lowercase, each
    character outside ``[a-z0-9-]`` a dash), so every row name can run, ``local_agent``'s
    included."""
    return re.sub(r"[^a-z0-9-]", "-", cell_id.lower()).lstrip("-") or "cell"


def cell_scenario(
    public: LabPublic,
    private: LabPrivate,
    *,
    name: str,
    seed: int,
    fault: FaultEntry | None,
    description: str = "",
) -> Scenario:
    """The scenario one cell runs: the public request, the world seeded with the cell's
    seed, and the cell's fault (none for a baseline)."""
    return Scenario(
        name=name,
        description=description,
        world=private.world.seeded(seed),
        task=TaskSpec.model_validate(
            {**public.request.model_dump(mode="json"), "capabilities": list(public.capabilities)}
        ),
        contracts=public.contracts,
        faults=[fault] if fault is not None else [],
        expect=private.expect,
        limits=private.limits,
    )
