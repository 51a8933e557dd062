"""S5.7 on real runs: a guardrail that gives up escalates (LangGraph's validator through
``interrupt()``, CrewAI's exhaustion of ``guardrail_max_retries``). The run still
completes, the task counts as failed, the escalation is a hard-tier act and never a
RUN_ERROR. The trace keeps its documented form (docs/TRACE.md): run_start first, the probe
after the pipeline, and one run_end, the pipeline's own task_failed, as the last event.

Under the vigilant persona the weak tier that O4 swaps in cannot satisfy T2's contract,
so both guardrails run out of retries on that cell."""

from __future__ import annotations

import pytest
from e2e_bank import SEED, CellBank, require_adapter

from pytest_sabot.core.models.cells import cell_id

ESCALATING = {
    "langgraph": "interrupt",
    "crewai": "escalation",
}


@pytest.mark.parametrize("framework", sorted(ESCALATING))
def test_S5_7_guardrail_exhaustion_escalates_and_ends_the_run_task_failed(
    bank: CellBank, framework: str
) -> None:
    require_adapter(framework)
    rec = bank.run(cell_id(framework, "guardrail", "O4", "T2", SEED))
    kinds = [e.kind for e in rec.trace.events]
    assert rec.outcome.error is None, rec.outcome.error
    assert ESCALATING[framework] in kinds, kinds
    assert kinds[0] == "run_start" and kinds[-1] == "run_end", kinds[-4:]
    assert kinds.count("run_end") == 1 and kinds.index("probe") < len(kinds) - 1
    (end,) = rec.trace.of_kind("run_end")
    assert end.data.status == "task_failed" and end.component == "pipeline"
    assert not rec.outcome.passed

    verdict = bank.verdict(rec)
    assert verdict.excluded is None, verdict.excluded
    assert any(a.act == "escalate" for a in verdict.acts), verdict.acts
    assert verdict.detected_hard and verdict.reacted
