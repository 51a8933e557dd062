"""The six fault operators of the Sabot standard (section 4), one module each, and the
fault lab's O7..O11 (docs/LAB.md), registered for the lab matrix on lab tasks only."""

from __future__ import annotations

from pytest_sabot.core.models.trace import OperatorId
from pytest_sabot.operators.base import InjectionSpec, Operator, Planted
from pytest_sabot.operators.lab_fault import LabFault, LabPlan
from pytest_sabot.operators.o1_tool_lie import ToolLie
from pytest_sabot.operators.o2_false_success import FalseSuccess
from pytest_sabot.operators.o3_message_alteration import MessageAlteration
from pytest_sabot.operators.o4_model_downgrade import ModelDowngrade
from pytest_sabot.operators.o5_stale_context import StaleContext
from pytest_sabot.operators.o6_silent_noop import SilentNoop
from pytest_sabot.operators.o7_timeout_before_commit import TimeoutBeforeCommit
from pytest_sabot.operators.o8_timeout_after_commit import TimeoutAfterCommit
from pytest_sabot.operators.o9_duplicate_delivery import DuplicateDelivery
from pytest_sabot.operators.o10_rate_limit import RateLimit
from pytest_sabot.operators.o11_stale_read import StaleRead

OPERATOR_CLASSES: dict[str, type[Operator]] = {
    "O1": ToolLie,
    "O2": FalseSuccess,
    "O3": MessageAlteration,
    "O4": ModelDowngrade,
    "O5": StaleContext,
    "O6": SilentNoop,
}
LAB_OPERATOR_CLASSES: dict[str, type[LabFault]] = {
    "O7": TimeoutBeforeCommit,
    "O8": TimeoutAfterCommit,
    "O9": DuplicateDelivery,
    "O10": RateLimit,
    "O11": StaleRead,
}


def arm(operator_id: OperatorId, spec: InjectionSpec) -> Operator:
    """An operator configured by the task's injection spec (never special-cased per task)."""
    if operator_id in LAB_OPERATOR_CLASSES:
        raise ValueError(f"{operator_id} is a lab operator: arm it with arm_lab")
    return OPERATOR_CLASSES[operator_id](id=operator_id, spec=spec)


def arm_lab(operator_id: OperatorId, fault: object) -> LabFault:
    """A lab operator armed from its fault schedule entry (its injection plan)."""
    cls = LAB_OPERATOR_CLASSES[operator_id]
    operator = cls(id=operator_id, spec=LabPlan(fault))
    if operator.fault.operator != operator_id:
        raise ValueError(f"{operator_id} cannot plant {operator.entry.fault}")
    return operator


__all__ = [
    "LAB_OPERATOR_CLASSES",
    "OPERATOR_CLASSES",
    "InjectionSpec",
    "LabFault",
    "LabPlan",
    "Operator",
    "Planted",
    "arm",
    "arm_lab",
]
