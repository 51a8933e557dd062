"""S4.4 and S1.3: every operator plants exactly one fault and its landing probe proves the
fault reached the pipeline's data path, on every task and in every pipeline.

Two slices cover it without running the whole matrix: each operator on all five tasks in
one pipeline (the pipelines rotate across operators), and all six operators on T1 in every
pipeline. In the Magentic-One configuration (autogen guardrail) O2, O3 and O6 act on the
team's answer after the team run is over (the registered carve-out of later waves): they
land, but no agent reads the faulted content afterwards."""

from __future__ import annotations

import pytest
from e2e_bank import ROWS, SEED, CellBank, Recorded, require_adapter

from pytest_sabot.core.models.cells import OPERATORS, TASKS, cell_id

# One pipeline per operator for the all-tasks slice; each framework appears twice.
OPERATOR_ROW: dict[str, tuple[str, str]] = {
    "O1": ("langgraph", "default"),
    "O2": ("crewai", "guardrail"),
    "O3": ("autogen", "default"),
    "O4": ("crewai", "default"),
    "O5": ("autogen", "guardrail"),
    "O6": ("langgraph", "guardrail"),
}
AFTER_THE_TEAM_RUN = {"O2", "O3", "O6"}


def operator_cell(operator: str, task: str) -> str:
    framework, config = OPERATOR_ROW[operator]
    return cell_id(framework, config, operator, task, SEED)


def _assert_landed(rec: Recorded, consumed: bool) -> None:
    probe = rec.probe
    assert rec.outcome.error is None, f"{rec.cell.id}: run error {rec.outcome.error}"
    assert probe.operator == rec.cell.operator
    assert probe.landed, f"{rec.cell.id}: did not land: {probe.evidence}"
    assert probe.consumed is consumed, f"{rec.cell.id}: consumed={probe.consumed}: {probe.evidence}"


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("operator", OPERATORS)
def test_S4_4_every_operator_lands_on_every_task(bank: CellBank, operator: str, task: str) -> None:
    require_adapter(OPERATOR_ROW[operator][0])
    _assert_landed(bank.run(operator_cell(operator, task)), consumed=True)


@pytest.mark.slow
@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize(("framework", "config"), ROWS, ids=[f"{f}-{c}" for f, c in ROWS])
def test_S4_4_every_operator_lands_in_every_pipeline(
    bank: CellBank, framework: str, config: str, operator: str
) -> None:
    require_adapter(framework)
    rec = bank.run(cell_id(framework, config, operator, "T1", SEED))
    magentic_late = (framework, config) == ("autogen", "guardrail") and (
        operator in AFTER_THE_TEAM_RUN
    )
    _assert_landed(rec, consumed=not magentic_late)


@pytest.mark.slow
@pytest.mark.parametrize("operator", OPERATORS)
def test_S1_3_a_fault_run_carries_exactly_one_fault(bank: CellBank, operator: str) -> None:
    """One injection event, of the cell's own operator, before the probe reads it."""
    require_adapter(OPERATOR_ROW[operator][0])
    for task in TASKS:
        rec = bank.run(operator_cell(operator, task))
        injections = rec.trace.of_kind("injection")
        assert len(injections) == 1, f"{rec.cell.id}: {len(injections)} injection events"
        assert injections[0].data.operator == operator
        assert injections[0].seq < rec.trace.of_kind("probe")[0].seq
