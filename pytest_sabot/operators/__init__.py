"""The six fault operators of the Sabot standard (section 4), one module each."""

from __future__ import annotations

from pytest_sabot.core.models.trace import OperatorId
from pytest_sabot.operators.base import InjectionSpec, Operator, Planted
from pytest_sabot.operators.o1_tool_lie import ToolLie
from pytest_sabot.operators.o2_false_success import FalseSuccess
from pytest_sabot.operators.o3_message_alteration import MessageAlteration
from pytest_sabot.operators.o4_model_downgrade import ModelDowngrade
from pytest_sabot.operators.o5_stale_context import StaleContext
from pytest_sabot.operators.o6_silent_noop import SilentNoop

OPERATOR_CLASSES: dict[str, type[Operator]] = {
    "O1": ToolLie,
    "O2": FalseSuccess,
    "O3": MessageAlteration,
    "O4": ModelDowngrade,
    "O5": StaleContext,
    "O6": SilentNoop,
}


def arm(operator_id: OperatorId, spec: InjectionSpec) -> Operator:
    """An operator configured by the task's injection spec (never special-cased per task)."""
    return OPERATOR_CLASSES[operator_id](id=operator_id, spec=spec)


__all__ = ["OPERATOR_CLASSES", "InjectionSpec", "Operator", "Planted", "arm"]
