"""Task files (tasks/Tn/): the public view a pipeline may see and the private spec only the
scorer and the harness's operator seams read.

Layout of one task directory::

    tasks/Tn/public/task.yaml        TaskFile: brief, materials, tools, contract revisions
    tasks/Tn/public/<material>       each material's text (current revision)
    tasks/Tn/public/<contract>.yaml  ContractFile: the published output contract
    tasks/Tn/private/criterion.yaml  CriterionFile: the deterministic pass criterion
    tasks/Tn/private/operators.yaml  OperatorsFile: one injection spec per operator O1..O6
    tasks/Tn/private/operators-<id>.yaml
                                     AddedOperatorFile: the spec of an operator declared
                                     after operators.yaml was registered (one file each, so
                                     a matrix that does not run it keeps its registration)
    tasks/Tn/private/stale/<file>    superseded material revisions handed over by O5

Every model forbids unknown keys, so a typo in a task file fails at load time with the file,
the field and what was expected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field, model_validator

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.core.models.trace import OperatorId, TaskId
from pytest_sabot.core.operators import MessageSeam, declaration

SpecT = TypeVar("SpecT")

ToolRole = Literal["data", "check", "write"]


# --------------------------------------------------------------------------- contract


class NonEmptyRule(FrozenModel):
    """The artifact has at least one non-blank character."""

    kind: Literal["non_empty"] = "non_empty"


class MaxCharsRule(FrozenModel):
    """The artifact is at most ``limit`` characters long."""

    kind: Literal["max_chars"] = "max_chars"
    limit: int = Field(gt=0, description="Largest allowed length in characters.")


class JsonObjectRule(FrozenModel):
    """The artifact parses as one JSON object."""

    kind: Literal["json_object"] = "json_object"


class FieldShape(FrozenModel):
    """The shape one JSON field must have (structure only, never an answer value)."""

    type: Literal["string", "number", "integer", "array", "object", "boolean"] = Field(
        description="JSON type of the field."
    )
    pattern: str | None = Field(None, description="Regex a string value must fully match.")
    one_of: list[str] | None = Field(None, description="Allowed string values.")
    items: Literal["string", "number", "object"] | None = Field(
        None, description="JSON type of every element when the field is an array."
    )
    min_items: int | None = Field(None, description="Fewest elements an array may have.")


class JsonFieldsRule(FrozenModel):
    """The artifact's JSON object has exactly these fields, each of the given shape."""

    kind: Literal["json_fields"] = "json_fields"
    fields: dict[str, FieldShape] = Field(description="Field name -> required shape.")
    allow_extra: bool = Field(False, description="Whether fields not listed are allowed.")


class ContainsAllRule(FrozenModel):
    """Every listed substring occurs in the artifact."""

    kind: Literal["contains_all"] = "contains_all"
    substrings: list[str] = Field(min_length=1, description="Substrings that must all occur.")
    case_sensitive: bool = Field(True, description="Whether matching respects case.")


class PythonModuleRule(FrozenModel):
    """The artifact is Python source that parses and defines at least one top-level
    function; imports are limited to the listed standard-library modules."""

    kind: Literal["python_module"] = "python_module"
    allowed_imports: list[str] = Field(
        default_factory=list, description="Top-level modules an import may name."
    )


class LinePrefixesRule(FrozenModel):
    """Each prefix starts exactly one line of the artifact, in the listed order."""

    kind: Literal["line_prefixes"] = "line_prefixes"
    prefixes: list[str] = Field(min_length=1, description="Line prefixes, in order.")


class QuotedLineRule(FrozenModel):
    """The line starting with ``prefix`` carries a double-quoted text after it."""

    kind: Literal["quoted_line"] = "quoted_line"
    prefix: str = Field(description="Prefix of the line that must hold a quotation.")


ContractRule = Annotated[
    NonEmptyRule
    | MaxCharsRule
    | JsonObjectRule
    | JsonFieldsRule
    | ContainsAllRule
    | PythonModuleRule
    | LinePrefixesRule
    | QuotedLineRule,
    Field(discriminator="kind"),
]


class ContractFile(FrozenModel):
    """One revision of a task's published output contract (structural only)."""

    revisions: list[str] = Field(
        min_length=1, description="Contract revision ids this file serves, e.g. ['v0.1', 'v0.2']."
    )
    artifact: str = Field(description="Name of the artifact file, e.g. 'output.json'.")
    text: str = Field(min_length=1, description="The contract as agents read it.")
    rules: list[ContractRule] = Field(
        min_length=1, description="Machine-checkable rules; the text states each of them."
    )


# --------------------------------------------------------------------------- tools


class DataToolSpec(FrozenModel):
    """Records a data tool answers from, keyed by one argument."""

    key: str = Field(description="Name of the argument that selects a record.")
    records: dict[str, str] = Field(
        min_length=1, description="Key -> observation text returned for it."
    )
    not_found: str = Field(
        description="Observation for an unknown key; '{key}' is replaced by the key asked."
    )


class CheckToolSpec(FrozenModel):
    """Which public check a check tool runs on the draft it is given."""

    kind: Literal[
        "record_fields", "summary_markers", "python_cases", "plan_rules", "quote_match"
    ] = Field(description="Name of the check procedure in pytest_sabot.tasks.checks.")
    argument: str = Field(description="Name of the argument carrying the draft.")
    params: dict[str, Any] = Field(
        default_factory=dict, description="Parameters of the check procedure (public data)."
    )


class WriteToolSpec(FrozenModel):
    """How a write tool commits the artifact into the run's workspace."""

    content_argument: str = Field(description="Argument holding the content to write.")
    name_argument: str | None = Field(
        None, description="Argument holding the file name (None: the name is fixed)."
    )
    fixed_name: str | None = Field(None, description="File name when it is fixed.")
    success: str = Field(
        description="Observation on success; '{name}' and '{bytes}' are filled in."
    )

    @model_validator(mode="after")
    def _one_name_source(self) -> WriteToolSpec:
        if (self.name_argument is None) == (self.fixed_name is None):
            raise ValueError("exactly one of name_argument and fixed_name must be set")
        return self


class ToolSpec(FrozenModel):
    """One tool of the task, as published to the worker."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="Tool name.")
    role: ToolRole = Field(description="data, check or write (which operator seam applies).")
    description: str = Field(min_length=1, description="What the tool does, for the agent.")
    parameters: dict[str, Any] = Field(description="JSON Schema of the arguments.")
    data: DataToolSpec | None = Field(None, description="Records, for a data tool.")
    check: CheckToolSpec | None = Field(None, description="Check procedure, for a check tool.")
    write: WriteToolSpec | None = Field(None, description="Write behaviour, for a write tool.")

    @model_validator(mode="after")
    def _role_matches_body(self) -> ToolSpec:
        bodies = {"data": self.data, "check": self.check, "write": self.write}
        for role, body in bodies.items():
            if (role == self.role) != (body is not None):
                raise ValueError(f"a '{self.role}' tool needs exactly the '{self.role}' block")
        if self.parameters.get("type") != "object":
            raise ValueError("parameters must be a JSON Schema with type 'object'")
        return self


# --------------------------------------------------------------------------- task file


class MaterialRef(FrozenModel):
    """A material the pipeline reads, stored next to task.yaml."""

    name: str = Field(description="Material name shown to agents, e.g. 'bench_sheet.md'.")
    file: str = Field(description="File name under public/.")
    revision: str = Field(description="Current revision label, e.g. 'rev B'.")


class TaskFile(FrozenModel):
    """tasks/Tn/public/task.yaml."""

    id: TaskId
    title: str = Field(min_length=1)
    brief: str = Field(min_length=1, description="What the worker must do.")
    artifact: str = Field(description="Artifact file name the write tool must commit.")
    materials: list[MaterialRef] = Field(min_length=1)
    tools: list[ToolSpec] = Field(min_length=3, max_length=3)
    contracts: dict[str, str] = Field(
        min_length=1, description="Contract revision id -> contract file under public/."
    )

    @model_validator(mode="after")
    def _one_tool_per_role(self) -> TaskFile:
        roles = sorted(t.role for t in self.tools)
        if roles != ["check", "data", "write"]:
            raise ValueError("tools must be exactly one data, one check and one write tool")
        return self


# --------------------------------------------------------------------------- private


class JsonRecordCriterion(FrozenModel):
    """The artifact is a JSON object equal to ``expected`` (numbers within tolerance)."""

    kind: Literal["json_record"] = "json_record"
    expected: dict[str, Any] = Field(description="The correct record.")
    tolerance: float = Field(1e-6, ge=0, description="Absolute tolerance for numbers.")


class TextFactsCriterion(FrozenModel):
    """Each group has one alternative present; no forbidden substring occurs."""

    kind: Literal["text_facts"] = "text_facts"
    required: list[list[str]] = Field(
        min_length=1, description="Groups of alternatives; each group must match once."
    )
    forbidden: list[str] = Field(default_factory=list, description="Substrings that fail.")


class PythonCase(FrozenModel):
    """One call of the function under test and its correct result."""

    args: list[Any] = Field(description="Positional arguments.")
    expected: float | str = Field(
        description="Correct return value, or 'ValueError' when the call must raise it."
    )


class PythonFunctionCriterion(FrozenModel):
    """Run the artifact in a subprocess and compare a function's results case by case."""

    kind: Literal["python_function"] = "python_function"
    function: str = Field(description="Function name the artifact must define.")
    cases: list[PythonCase] = Field(min_length=1)
    tolerance: float = Field(0.005, ge=0)
    timeout_s: float = Field(10.0, gt=0, description="Wall-clock limit for the subprocess.")


class CitedAnswerCriterion(FrozenModel):
    """ANSWER/QUOTE/SOURCE lines: answer facts present, quote equal to the source sentence."""

    kind: Literal["cited_answer"] = "cited_answer"
    answer_required: list[str] = Field(min_length=1)
    answer_forbidden: list[str] = Field(default_factory=list)
    quote: str = Field(description="The source sentence, verbatim.")
    source: str = Field(description="Substring the SOURCE line must contain.")


Criterion = Annotated[
    JsonRecordCriterion | TextFactsCriterion | PythonFunctionCriterion | CitedAnswerCriterion,
    Field(discriminator="kind"),
]


class CriterionFile(FrozenModel):
    """tasks/Tn/private/criterion.yaml."""

    task: TaskId
    required_effects: list[str] = Field(
        min_length=1, description="Workspace files that must hold the final artifact."
    )
    check: Criterion


class OperatorSpec(FrozenModel):
    """How one operator plants its fault in this task, and what catching it means."""

    seam: MessageSeam = Field(description="Harness seam the fault is planted at.")
    target: str = Field(description="Tool, channel, agent or material the fault hits.")
    original: str = Field(description="The correct content (or a description of it).")
    injected: str = Field(description="What replaces it (O4: the weak tier's symptom).")
    ground_truth: str = Field(min_length=1, description="What a correct detection flags.")
    stale_file: str | None = Field(
        None, description="O5 only: the superseded revision's file under private/stale/."
    )


def spec_problem(operator: str, spec: OperatorSpec) -> str | None:
    """What is wrong with one operator's spec on a task of the standard, or None: the
    operator must be a message operator, planted at one of its declared seams; one planted
    at the material seam hands over a superseded revision (its ``stale_file``); what it
    injects differs from the original (a fault that changes nothing would land, and its
    cell would be scored a miss of a fault that was never there)."""
    found = declaration(operator)
    if found.lab:
        return f"{operator} is a fault-lab operator; it belongs to a lab task (T6)"
    if spec.seam not in found.seams:
        return f"{operator} must use seam '{found.seams[0]}', not '{spec.seam}'"
    if spec.injected.strip() == spec.original.strip():
        return (f"{operator}: injected is the same as original ({spec.original.strip()!r}), "
                "so the planted fault would change nothing")
    if spec.seam == "material" and spec.stale_file is None:
        return f"{operator} needs stale_file (the superseded material revision)"
    return None


def refuse_spec_problems(
    specs: Mapping[str, SpecT], problem: Callable[[str, SpecT], str | None]
) -> None:
    """Raise ValueError with the first of ``specs`` that ``problem`` finds wrong (for the
    operators files' validators, the standard's and the lab's alike)."""
    for operator, spec in specs.items():
        found = problem(operator, spec)
        if found is not None:
            raise ValueError(found)


class OperatorsFile(FrozenModel):
    """tasks/Tn/private/operators.yaml: one spec per operator, written before any run. Every
    message operator has exactly one spec, here or in its own operators-<id>.yaml (checked
    by the loader, which reads both)."""

    task: TaskId
    operators: dict[OperatorId, OperatorSpec]

    @model_validator(mode="after")
    def _each(self) -> OperatorsFile:
        refuse_spec_problems(self.operators, spec_problem)
        return self


class AddedOperatorFile(FrozenModel):
    """tasks/Tn/private/operators-<id>.yaml: the spec of one operator declared after the
    task's operators.yaml was registered, written before any run of a matrix that runs it."""

    task: TaskId
    operator: OperatorId
    spec: OperatorSpec

    @model_validator(mode="after")
    def _valid(self) -> AddedOperatorFile:
        refuse_spec_problems({self.operator: self.spec}, spec_problem)
        return self
