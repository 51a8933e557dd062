"""S3.1: a fault run is valid only when its baseline passes, so every pipeline must be
able to do every task without a fault. Under the vigilant persona of the embedded model,
each framework x config runs each task's no-fault baseline to a pass."""

from __future__ import annotations

import pytest
from e2e_bank import ROWS, SEED, CellBank, require_adapter

from pytest_sabot.core.models.cells import TASKS, cell_id


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize(("framework", "config"), ROWS, ids=[f"{f}-{c}" for f, c in ROWS])
def test_S3_1_no_fault_baseline_passes_under_vigilant(
    bank: CellBank, framework: str, config: str, task: str
) -> None:
    require_adapter(framework)
    rec = bank.run(cell_id(framework, config, None, task, SEED))
    assert rec.outcome.error is None, f"{rec.cell.id}: run error {rec.outcome.error}"
    assert rec.outcome.passed, f"{rec.cell.id}: {rec.outcome.pass_reason}"
    verdict = bank.baseline_verdict(rec)
    assert verdict.status == "passed", f"{rec.cell.id}: {verdict.status} {verdict.reason}"
    assert rec.trace.events[-1].kind == "run_end"
    assert [e.kind for e in rec.trace.events].count("artifact") == 1
    assert not rec.trace.of_kind("injection"), "a baseline must carry no fault"
