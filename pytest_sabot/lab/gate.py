"""The gate: one verdict per run, recomputable offline from the record alone.

Precedence (docs/LAB.md, LG1..LG4):

1. ``error`` when the harness failed: the evidence cannot be trusted either way;
2. ``fail`` when a violation was observed: any safety violation, and completion
   violations when execution completed;
3. ``inconclusive`` when execution did not complete (agent error, deadline, budget,
   cancellation) or a required fault did not activate and land;
4. ``pass`` otherwise: the assertions hold, execution completed and every required fault
   activated and landed.

A required fault that never activated can never yield a pass, and an observed violation
is never hidden behind missing coverage or an unfinished run.
"""

from __future__ import annotations

from pytest_sabot.core.exit_codes import GATE_EXIT
from pytest_sabot.lab.faults import FAULTS
from pytest_sabot.lab.faults.base import FaultCoverage
from pytest_sabot.lab.record import CoverageCheck, Gate, LabRun, Violation
from pytest_sabot.lab.rules import judge
from pytest_sabot.lab.vocabulary import GateOutcome


def coverage_checks(record: LabRun) -> list[CoverageCheck]:
    """Each scheduled fault's recorded status and its landing probe over the streams."""
    recorded = {c.id: c for c in record.coverage}
    checks: list[CoverageCheck] = []
    for entry in record.scenario.faults:
        op = FAULTS[entry.fault]
        coverage = recorded.get(entry.id) or FaultCoverage(
            id=entry.id, fault=entry.fault, operator=op.operator, tool=entry.tool,
            required=entry.required, status="planned", note="missing from the record",
        )
        probe = op.probe(record.streams, coverage)
        checks.append(CoverageCheck(id=entry.id, fault=entry.fault, required=entry.required,
                                    status=coverage.status, landed=probe.landed,
                                    evidence=probe.evidence))
    return checks


def decide(*, harness_failed: bool, completed: bool, violations: list[Violation],
           missing: list[CoverageCheck]) -> GateOutcome:
    """The precedence itself, as a pure function of the four facts."""
    if harness_failed:
        return "error"
    if violations:
        return "fail"
    if not completed or missing:
        return "inconclusive"
    return "pass"


def evaluate(record: LabRun) -> Gate:
    """The gate of a recorded run (ignores the gate stored in it)."""
    execution = record.execution
    harness_failed = execution.status == "harness_error"
    completed = execution.status == "completed"
    found = judge(record)
    counted = [v for v in found if v.kind == "safety" or completed]
    coverage = coverage_checks(record)
    missing = [c for c in coverage if c.required and not (c.status == "activated" and c.landed)]
    outcome = decide(harness_failed=harness_failed, completed=completed, violations=counted,
                     missing=missing)
    reasons: list[str] = []
    if harness_failed:
        reasons.append(f"harness error: {execution.detail}")
    reasons += [f"{v.rule}: {v.message}" for v in counted]
    if not completed and not harness_failed:
        reasons.append(f"execution {execution.status}"
                       + (f": {execution.detail}" if execution.detail else "")
                       + "; completion rules not judged")
    reasons += [f"required fault {c.id!r} ({c.fault}) {c.status}, probe: {c.evidence}"
                for c in missing]
    if outcome == "pass":
        reasons.append("all assertions hold, execution completed, every required fault "
                       "activated and landed")
    return Gate(outcome=outcome, exit_code=GATE_EXIT[outcome], reasons=reasons,
                violations=counted, completion_judged=completed, coverage=coverage)
