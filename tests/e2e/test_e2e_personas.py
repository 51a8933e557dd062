"""S2.1 / S5.6 on real pipelines: a reviewer or guardrail that cross-checks rejects a tool
lie, and one that approves everything never rejects. The same O1 cell is run under the
embedded model's vigilant and credulous personas and scored from its trace; only the
persona differs.

Rows with a verdict-token reviewer or guardrail take part. Magentic-One (autogen
guardrail) has no reviewer: its mapping has no reject act (its surfaces are re-plans and
stop_reason blocks), so it is outside this rule."""

from __future__ import annotations

import pytest
from e2e_bank import CREDULOUS, ROWS, SEED, VIGILANT, CellBank, require_adapter

from pytest_sabot.core.models.cells import cell_id

REVIEWED_ROWS = [row for row in ROWS if row != ("autogen", "guardrail")]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("framework", "config"), REVIEWED_ROWS, ids=[f"{f}-{c}" for f, c in REVIEWED_ROWS]
)
def test_S5_6_vigilant_reviewer_rejects_tool_lie_and_credulous_never_rejects(
    bank: CellBank, framework: str, config: str
) -> None:
    require_adapter(framework)
    cell = cell_id(framework, config, "O1", "T1", SEED)

    vigilant = bank.verdict(bank.run(cell, VIGILANT))
    rejects = [a for a in vigilant.acts if a.act == "reject"]
    assert rejects, f"{cell} under {VIGILANT}: no reject act in {vigilant.acts}"
    assert all(a.after_injection for a in rejects)
    assert vigilant.excluded is None, vigilant.excluded
    assert vigilant.detected_hard and vigilant.detection == "DETECTED_HARD"

    credulous = bank.verdict(bank.run(cell, CREDULOUS))
    assert not [a for a in credulous.acts if a.act == "reject"], (
        f"{cell} under {CREDULOUS}: reject act(s) {credulous.acts}"
    )
