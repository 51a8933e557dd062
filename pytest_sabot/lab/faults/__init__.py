"""The lab's faults O7..O11, one module each, and the schedule entry union.

``FAULTS`` maps a fault kind to its operator; ``FaultEntry`` is the discriminated union
a scenario's ``faults:`` list is validated against.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from pytest_sabot.lab.faults import (
    o7_timeout_before_commit,
    o8_timeout_after_commit,
    o9_duplicate_delivery,
    o10_rate_limit,
    o11_stale_read,
)
from pytest_sabot.lab.faults.base import (
    Activation,
    CoverageStatus,
    FaultCoverage,
    FaultOperator,
    Probe,
    Suppression,
)
from pytest_sabot.lab.faults.o7_timeout_before_commit import TimeoutBeforeCommitFault
from pytest_sabot.lab.faults.o8_timeout_after_commit import TimeoutAfterCommitFault
from pytest_sabot.lab.faults.o9_duplicate_delivery import DuplicateDeliveryFault
from pytest_sabot.lab.faults.o10_rate_limit import RateLimitFault
from pytest_sabot.lab.faults.o11_stale_read import StaleReadFault

__all__ = [
    "FAULTS",
    "Activation",
    "CoverageStatus",
    "DuplicateDeliveryFault",
    "FaultCoverage",
    "FaultEntry",
    "FaultOperator",
    "Probe",
    "RateLimitFault",
    "StaleReadFault",
    "Suppression",
    "TimeoutAfterCommitFault",
    "TimeoutBeforeCommitFault",
]

FAULTS: dict[str, FaultOperator] = {
    op.kind: op
    for op in (
        o7_timeout_before_commit.OPERATOR,
        o8_timeout_after_commit.OPERATOR,
        o9_duplicate_delivery.OPERATOR,
        o10_rate_limit.OPERATOR,
        o11_stale_read.OPERATOR,
    )
}

FaultEntry = Annotated[
    TimeoutBeforeCommitFault
    | TimeoutAfterCommitFault
    | DuplicateDeliveryFault
    | RateLimitFault
    | StaleReadFault,
    Field(discriminator="fault"),
]
