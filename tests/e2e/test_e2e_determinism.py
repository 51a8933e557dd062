"""S1.6: a verdict can be recomputed from the trace, and under the embedded model the
trace itself is reproducible: the same cell run twice records the same events, apart from
wall-clock fields (event times and call latencies)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from e2e_bank import SEED, VIGILANT, CellBank, require_adapter

from pytest_sabot.core.models.cells import FRAMEWORKS, cell_id
from pytest_sabot.core.models.trace import Trace

TIMING_FIELDS = frozenset({"latency_ms"})


def comparable(trace: Trace) -> list[dict[str, Any]]:
    """The events without their wall-clock fields."""
    out = []
    for event in trace.events:
        raw = event.model_dump(mode="json")
        raw.pop("t")
        raw["data"] = {k: v for k, v in raw["data"].items() if k not in TIMING_FIELDS}
        out.append(raw)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_S1_6_same_cell_twice_under_sim_records_the_same_trace(
    bank: CellBank, tmp_path: Path, framework: str
) -> None:
    require_adapter(framework)
    cell = cell_id(framework, "guardrail", "O3", "T1", SEED)
    first = bank.run(cell, VIGILANT)
    second = bank.fresh(cell, VIGILANT, tmp_path)
    a, b = comparable(first.trace), comparable(second.trace)
    for x, y in zip(a, b, strict=False):
        assert x == y, f"{cell}: first difference at seq {x['seq']}"
    assert len(a) == len(b)
    assert first.requests == second.requests
    assert first.outcome == second.outcome
