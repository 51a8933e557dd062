"""The lab's faults, one module each, and the schedule entry union, both derived from the
operators' declarations (core/operators.py).

Every transactional operator's declaration names its fault behaviour here
(``"pytest_sabot.lab.faults.<module>:FAULT"``): its schedule entry model, the tools it may
target, how it acts at the boundary and its landing probe. ``FAULTS`` maps a fault kind to
its operator; ``FaultEntry`` is the discriminated union a scenario's ``faults:`` list is
validated against.
"""

from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING, Annotated, Any, get_args

from pydantic import Field

from pytest_sabot.core.operators import DECLARATIONS
from pytest_sabot.core.registry import Registry, RegistryError
from pytest_sabot.lab.faults.base import (
    Activation,
    CoverageStatus,
    FaultBehaviour,
    FaultCoverage,
    FaultEntryBase,
    FaultOperator,
    Probe,
    Suppression,
)

__all__ = [
    "FAULTS",
    "Activation",
    "CoverageStatus",
    "FaultCoverage",
    "FaultEntry",
    "FaultOperator",
    "Probe",
    "Suppression",
    "entry_model",
]

_DECLARED = [d for d in DECLARATIONS if d.fault is not None and d.fault_kind is not None]
_BEHAVIOURS: Registry[FaultBehaviour] = Registry(
    "lab fault", {d.fault_kind: d.fault for d in _DECLARED if d.fault_kind and d.fault}
)


def _fault(kind: str, op_id: str, summary: str) -> FaultOperator:
    behaviour = _BEHAVIOURS.load(kind)
    declared = get_args(behaviour.entry.model_fields["fault"].annotation)
    if declared != (kind,):
        raise RegistryError(f"{op_id} declares the lab fault {kind!r}, but its schedule "
                            f"entry {behaviour.entry.__name__} plants {declared}")
    return FaultOperator(kind=kind, operator=op_id, targets=behaviour.targets,
                         summary=summary, intercept=behaviour.intercept,
                         probe=behaviour.probe, holds=behaviour.holds)


FAULTS: dict[str, FaultOperator] = {
    d.fault_kind: _fault(d.fault_kind, d.id, d.summary) for d in _DECLARED if d.fault_kind
}
"""Every declared lab fault by kind, in operator order."""


def entry_model(kind: str) -> type[FaultEntryBase]:
    """The schedule entry model of one declared fault kind."""
    return _BEHAVIOURS.load(kind).entry


if TYPE_CHECKING:
    FaultEntry = FaultEntryBase
else:
    _ENTRIES: list[Any] = [entry_model(kind) for kind in FAULTS]
    FaultEntry = Annotated[functools.reduce(operator.or_, _ENTRIES), Field(discriminator="fault")]
"""One schedule entry of any declared fault (discriminated by its ``fault:`` kind)."""
