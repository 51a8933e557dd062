"""The fault lab's operators (O7 and above) as operators of a lab matrix (docs/LAB.md).

Every transactional operator's declaration (core/operators.py) names this one class as its
behaviour. Each is armed from its injection plan, the fault schedule entry of the lab
task's private spec (never the ground-truth note), and delegates everything to its fault
in ``pytest_sabot.lab.faults`` (the module its declaration names): the fault acts at the
transaction boundary of the run's lab session, where the lab records it. The harness's lab
bridge tells the operator when the fault activated (``planted``, and the seq of the
``injection`` event it wrote then) and, after the run, the gate's coverage check of the
entry: the fault's landing probe over the lab's four evidence streams. The operator's
probe reports that reading to the Sabot side, so a fault that never activated and landed
is INJECTION_UNVERIFIED, exactly as the lab gate calls such a run inconclusive.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_sabot.core.models.trace import ProbeData
from pytest_sabot.lab.faults import FAULTS, FaultOperator
from pytest_sabot.lab.record import CoverageCheck
from pytest_sabot.operators.base import Operator, later_model_call

SEAM = "transaction"


@dataclass(frozen=True)
class LabPlan:
    """A lab fault's injection plan: its schedule entry (seam, target and content follow)."""

    fault: Any  # one of pytest_sabot.lab.faults' entry models (FaultEntry)

    @property
    def seam(self) -> str:
        return SEAM

    @property
    def target(self) -> str:
        return str(self.fault.tool)

    @property
    def original(self) -> str:
        return f"the world's own answer to {self.fault.tool}"

    @property
    def injected(self) -> str:
        return str(self.fault.fault)

    @property
    def stale_file(self) -> str | None:
        return None


@dataclass
class LabFault(Operator):
    """One lab fault, delegating to its module in ``pytest_sabot.lab.faults``."""

    check: CoverageCheck | None = field(default=None, init=False)

    @property
    def entry(self) -> Any:
        """The fault schedule entry the lab session is armed with."""
        plan = self.spec
        assert isinstance(plan, LabPlan), "a lab operator is armed from a LabPlan"
        return plan.fault

    @property
    def fault(self) -> FaultOperator:
        return FAULTS[self.entry.fault]

    def record_check(self, check: CoverageCheck | None) -> None:
        """The gate's coverage check of this operator's entry, after the run."""
        self.check = check

    def probe(self, events: Sequence[Any]) -> ProbeData:
        """Landed when the gate's check says the entry activated and the fault's own probe
        found it in the lab's streams; consumed when a model call read the answer the fault
        shaped (the observation came back to the agent before that call)."""
        check = self.check
        if check is None:
            return ProbeData(operator=self.id, landed=False,
                             evidence="the run left no lab record to probe")
        landed = check.status == "activated" and check.landed
        evidence = f"{check.fault} {check.status}; lab probe: {check.evidence}"
        if not landed or self.injection_seq is None:
            return ProbeData(operator=self.id, landed=False, evidence=evidence)
        read = later_model_call(events, self.injection_seq)
        if read is not None:
            evidence += f"; read by model call seq {read.seq}"
        return ProbeData(operator=self.id, landed=True, consumed=read is not None,
                         evidence=evidence)
