"""The fault operators, each declared once: what it is, what it needs, where it lives.

One :class:`Declaration` per operator says everything the rest of the package needs to know
of it without importing it:

* its ``id`` (``O1`` ...) and ``name``, and whether it is one of the Sabot standard's six
  operators (section 4) or an addition of this project's own;
* its ``family``: a ``message`` operator plants its fault at one of the harness's message
  seams (a tool result, a handoff, a material, the gateway) of the standard's tasks
  T1..T5; a ``transaction`` operator is a fault lab fault acting at the transaction
  boundary between a tool call and the lab's world, on a lab task (T6, docs/LAB.md), and
  runs only in a matrix marked ``lab: true``;
* the ``seams`` it plants at (a task's injection spec must name one of them);
* what its fault ``plants`` in the pipeline's view (a wrong value, a false claim, a weaker
  model), which the scorer's pre-registered predictions and anchor rules group by;
* whether it is judged on the model that served a call (``served_model``: its landing is
  read from the gateway's model_call facts under the rule version, SPEC I21), and whether
  its fault may hold a tool call unanswered (``holds_calls``: a liveness fault, SPEC I131);
* its landing probe, in words, and where its behaviour lives: ``behaviour`` names the
  operator class the harness arms, ``fault`` (a lab fault) the module's fault behaviour,
  each as ``"module:attribute"`` imported only when first needed (:mod:`.registry`).

Every list of operator ids in the package (the standard's default, the lab's, the id type
of every file format, the seams of the injection specs, the lab's fault kinds, the
registry the harness arms from) is derived from :data:`DECLARATIONS`. Adding an operator is
one entry here, its module, and its task specs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

from pydantic import AfterValidator, WithJsonSchema

from pytest_sabot.core.registry import Registry


class InjectionSpec(Protocol):
    """What an operator reads of its spec: where and how to plant the fault. The
    ground-truth note is not part of it (the harness arms operators without it)."""

    @property
    def seam(self) -> str: ...

    @property
    def target(self) -> str: ...

    @property
    def original(self) -> str: ...

    @property
    def injected(self) -> str: ...

    @property
    def stale_file(self) -> str | None: ...

__all__ = [
    "BEHAVIOURS",
    "DECLARATIONS",
    "Declaration",
    "Family",
    "FaultKind",
    "LabOperatorId",
    "MessageSeam",
    "OperatorId",
    "Plants",
    "Seam",
    "declaration",
    "declared_names",
    "fault_kinds",
    "lab_operator_ids",
    "message_seams",
    "of_kind",
    "operator_ids",
    "seams",
    "served_model",
    "standard_operator_ids",
]

Family = Literal["message", "transaction"]
Plants = Literal["value", "claim", "model", "transaction"]

_LAB_FAULT = "pytest_sabot.operators.lab_fault:LabFault"


@dataclass(frozen=True)
class Declaration:
    """Everything the package knows of one operator, declared once."""

    id: str
    """The operator's id in cells, traces, task specs and results (``O`` and a number)."""
    name: str
    """Its name in words, e.g. 'tool-lie'."""
    family: Family
    """``message``: a harness message seam of T1..T5; ``transaction``: the fault lab's
    boundary on a lab task, in a lab matrix only."""
    seams: tuple[str, ...]
    """The seams it plants at; a task's injection spec names one of them."""
    plants: Plants
    """What its fault puts in the pipeline's view: a plausible wrong ``value``, a success
    ``claim`` for work that did not happen, a weaker ``model``, or a ``transaction`` the
    lab's boundary shaped."""
    summary: str
    """What it does, in one line (README's operator table, docs/LAB.md)."""
    probe: str
    """What its landing probe checks, in one line."""
    behaviour: str
    """``"module:attribute"`` of the operator class the harness arms."""
    standard: bool = False
    """One of the Sabot standard's operators (section 4); otherwise the project's own."""
    served_model: bool = False
    """Judged on the model that served a call (O4, SPEC I21): verified from the gateway's
    model_call facts under the rule version, never by its probe's own flag, and its
    downgrade model is part of a record's provenance."""
    holds_calls: bool = False
    """Its fault may hold a tool call unanswered (a liveness fault, SPEC I131): a matrix
    that runs it declares ``hang_bound_s``."""
    fault_kind: str | None = None
    """A lab fault's kind: the ``fault:`` value of its schedule entry (transaction family)."""
    fault: str | None = None
    """``"module:attribute"`` of a lab fault's behaviour (pytest_sabot/lab/faults/)."""

    def __post_init__(self) -> None:
        lab = self.family == "transaction"
        if lab != (self.fault is not None and self.fault_kind is not None):
            raise ValueError(f"operator {self.id}: a transaction operator, and only one, "
                             "names its lab fault and kind")
        if not self.seams:
            raise ValueError(f"operator {self.id}: at least one seam")

    @property
    def lab(self) -> bool:
        """A fault lab operator: it runs only on a lab task, in a lab matrix."""
        return self.family == "transaction"


def _standard(
    operator_id: str, name: str, seam: str, plants: Plants, summary: str, probe: str, *,
    served_model: bool = False,
) -> Declaration:
    """One of the standard's six operators: a message operator at one seam, its behaviour
    the class named after it in ``pytest_sabot.operators.o<number>_<name>``
    (``tool-lie``: ``o1_tool_lie:ToolLie``)."""
    module = f"o{operator_id[1:]}_{name.replace('-', '_')}"
    behaviour = "".join(part.capitalize() for part in name.split("-"))
    return Declaration(
        operator_id, name, "message", (seam,), plants, summary, probe,
        f"pytest_sabot.operators.{module}:{behaviour}", standard=True, served_model=served_model,
    )


def _lab_fault(
    operator_id: str, name: str, summary: str, probe: str, *, holds_calls: bool = False
) -> Declaration:
    """A fault lab operator: a transaction fault at the lab's boundary, armed by the one
    :class:`~pytest_sabot.operators.lab_fault.LabFault` class. Its kind is its name
    (``timeout-after-commit``: ``timeout_after_commit``) and its behaviour the ``FAULT`` of
    ``pytest_sabot.lab.faults.o<number>_<kind>``."""
    kind = name.replace("-", "_")
    return Declaration(
        operator_id, name, "transaction", ("transaction",), "transaction", summary, probe,
        _LAB_FAULT, holds_calls=holds_calls, fault_kind=kind,
        fault=f"pytest_sabot.lab.faults.o{operator_id[1:]}_{kind}:FAULT",
    )


DECLARATIONS: tuple[Declaration, ...] = (
    _standard(
        "O1", "tool-lie", "tool_result", "value",
        "a data-tool result gets a plausible wrong value",
        "a tool result after the injection carries the wrong value",
    ),
    _standard(
        "O2", "false-success", "check_result", "claim",
        "a check tool claims success and never runs",
        "the bare success claim was shown as the check's result",
    ),
    _standard(
        "O3", "message-alteration", "handoff", "value",
        "the worker-to-reviewer handoff is altered in transit",
        "a delivered message carries the alteration",
    ),
    _standard(
        "O4", "model-downgrade", "model", "model",
        "the gateway quietly serves the worker from a weaker tier",
        "a call of the agent was served by the weaker tier (read from the model_call facts)",
        served_model=True,
    ),
    _standard(
        "O5", "stale-context", "material", "value",
        "the worker gets a superseded revision of a document",
        "a model call was made with the stale material",
    ),
    _standard(
        "O6", "silent-noop", "effect", "claim",
        "the write tool says \"done\" and writes nothing",
        "an effect was not committed and its success was shown",
    ),
    _lab_fault(
        "O7", "timeout-before-commit",
        "no write, no operation record; generic timeout",
        "no delivery, no effect, generic timeout shown",
    ),
    _lab_fault(
        "O8", "timeout-after-commit",
        "write and operation record survive; the same generic timeout",
        "one delivery committed (with the request's key); generic timeout shown",
    ),
    _lab_fault(
        "O9", "duplicate-delivery",
        "two deliveries for one agent call; ordinary server idempotency applies",
        "deliveries 1 and 2 with equal arguments, the first answer shown",
    ),
    _lab_fault(
        "O10", "rate-limit",
        "typed pre-write denial with a virtual retry delay, optionally repeated",
        "no delivery, no effect, a typed denial with a delay shown",
    ),
    _lab_fault(
        "O11", "stale-read",
        "a real earlier committed snapshot; authoritative state unchanged",
        "one snapshot delivery that answers unlike the current state, shown verbatim",
    ),
    _lab_fault(
        "O12", "hung-tool",
        "the tool never returns: the call is held until the pipeline's own timeout or the "
        "cell's deadline",
        "the request was recorded, never delivered, never answered", holds_calls=True,
    ),
)
"""Every operator, in id order."""

_BY_ID: dict[str, Declaration] = {d.id: d for d in DECLARATIONS}
if len(_BY_ID) != len(DECLARATIONS):
    raise ValueError("two operators declare one id")

BEHAVIOURS: Registry[Any] = Registry(
    "fault operator", {d.id: d.behaviour for d in DECLARATIONS}, first=tuple(_BY_ID)
)
"""The operator classes the harness arms, by id, each imported on first use."""


def declaration(operator_id: str) -> Declaration:
    """The declaration of one operator (KeyError names the declared ids)."""
    try:
        return _BY_ID[operator_id]
    except KeyError:
        raise KeyError(f"unknown operator {operator_id!r} (declared: "
                       f"{', '.join(_BY_ID)})") from None


def served_model(operator_id: str | None) -> bool:
    """Whether a cell of this operator is judged on the model that served its calls (its
    declaration's ``served_model``; False for a baseline)."""
    return operator_id is not None and declaration(operator_id).served_model


def operator_ids(family: Family | None = None) -> tuple[str, ...]:
    """Every declared operator id in id order (of one family when given)."""
    return tuple(d.id for d in DECLARATIONS if family is None or d.family == family)


def standard_operator_ids() -> tuple[str, ...]:
    """The Sabot standard's operators (section 4): every wave's default."""
    return tuple(d.id for d in DECLARATIONS if d.standard)


def lab_operator_ids() -> tuple[str, ...]:
    """The fault lab's operators: they run only in a lab matrix, on a lab task."""
    return operator_ids("transaction")


def of_kind(plants: Plants) -> tuple[str, ...]:
    """The operators whose fault plants this kind of thing in the pipeline's view."""
    return tuple(d.id for d in DECLARATIONS if d.plants == plants)


def seams(family: Family | None = None) -> tuple[str, ...]:
    """Every seam an operator plants at, in declaration order, each once."""
    found = [s for d in DECLARATIONS if family is None or d.family == family for s in d.seams]
    return tuple(dict.fromkeys(found))


def message_seams() -> tuple[str, ...]:
    """The seams of the message operators (an injection spec of T1..T5 names one)."""
    return seams("message")


def fault_kinds() -> tuple[str, ...]:
    """The lab faults' kinds, in operator order."""
    return tuple(d.fault_kind for d in DECLARATIONS if d.fault_kind is not None)


def declared_names(values: Iterable[str]) -> str:
    """``'a', 'b' or 'c'``: a list of names as a validation message says them."""
    quoted = [repr(v) for v in values]
    if len(quoted) < 2:
        return "".join(quoted)
    return f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _accepts(values: tuple[str, ...]) -> Any:
    """The validator of a string that must be one of ``values`` (a Literal's check)."""

    def check(value: str) -> str:
        if value not in values:
            raise ValueError(f"Input should be {declared_names(values)}")
        return value

    return check


def _enum(values: tuple[str, ...]) -> dict[str, Any]:
    """The JSON Schema a Literal of ``values`` has."""
    return {"enum": list(values), "type": "string"}


OperatorId = Annotated[
    str, AfterValidator(_accepts(operator_ids())), WithJsonSchema(_enum(operator_ids()))
]
"""A declared operator's id: O1..O6 are the Sabot standard's; the fault lab's run only on a
lab task, in a lab matrix (docs/LAB.md)."""
LabOperatorId = Annotated[
    str, AfterValidator(_accepts(lab_operator_ids())), WithJsonSchema(_enum(lab_operator_ids()))
]
"""A declared fault lab operator's id."""
FaultKind = Annotated[
    str, AfterValidator(_accepts(fault_kinds())), WithJsonSchema(_enum(fault_kinds()))
]
"""A declared lab fault's kind (the ``fault:`` of a schedule entry)."""
Seam = Annotated[str, AfterValidator(_accepts(seams())), WithJsonSchema(_enum(seams()))]
"""Any declared seam ('transaction': a lab fault's)."""
MessageSeam = Annotated[
    str, AfterValidator(_accepts(message_seams())), WithJsonSchema(_enum(message_seams()))
]
"""A declared message seam (the seam of an injection spec of T1..T5)."""
