"""The fault operators, armed by id from their declarations (core/operators.py).

The message operators O1..O6 of the Sabot standard (section 4) are one module each here;
every fault lab operator is :class:`LabFault`, delegating to its fault module under
``pytest_sabot.lab.faults`` (docs/LAB.md). Which class an id arms is its declaration's
``behaviour``, imported on first use through the operators' registry.
"""

from __future__ import annotations

from pytest_sabot.core.operators import BEHAVIOURS, InjectionSpec, declaration
from pytest_sabot.operators.base import Operator, Planted
from pytest_sabot.operators.lab_fault import LabFault, LabPlan


def operator_class(operator_id: str) -> type[Operator]:
    """The class an operator id arms (its declaration's behaviour)."""
    cls = BEHAVIOURS.load(operator_id)
    if not (isinstance(cls, type) and issubclass(cls, Operator)):
        raise TypeError(f"{operator_id}'s behaviour {declaration(operator_id).behaviour} "
                        "is not an Operator class")
    return cls


def arm(operator_id: str, spec: InjectionSpec) -> Operator:
    """An operator configured by the task's injection spec (never special-cased per task)."""
    if declaration(operator_id).lab:
        raise ValueError(f"{operator_id} is a lab operator: arm it with arm_lab")
    return operator_class(operator_id)(id=operator_id, spec=spec)


def arm_lab(operator_id: str, fault: object) -> LabFault:
    """A lab operator armed from its fault schedule entry (its injection plan)."""
    if not declaration(operator_id).lab:
        raise ValueError(f"{operator_id} is not a lab operator: arm it with arm")
    cls = operator_class(operator_id)
    if not issubclass(cls, LabFault):
        raise TypeError(f"{operator_id}'s behaviour is not a LabFault")
    operator = cls(id=operator_id, spec=LabPlan(fault))
    if operator.fault.operator != operator_id:
        raise ValueError(f"{operator_id} cannot plant {operator.entry.fault}")
    return operator


__all__ = [
    "InjectionSpec",
    "LabFault",
    "LabPlan",
    "Operator",
    "Planted",
    "arm",
    "arm_lab",
    "operator_class",
]
