"""Selecting cells by filters (the slices behind -k / --sabot-* options)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.matrix.cells import load_wave, select_cells

ROOT = Path(__file__).resolve().parents[2]


def test_select_by_every_filter_keeps_registry_order() -> None:
    _, cells = load_wave(2, ROOT)
    chosen = select_cells(cells, framework="crewai", operator=["O3", "baseline"], seed=13)
    assert len(chosen) == 2 * 5 * 2
    assert [c.id for c in chosen] == [c.id for c in cells if c in chosen]
    assert {c.operator for c in chosen} == {"O3", None}
    assert all(c.seed == 13 and c.framework == "crewai" for c in chosen)


def test_select_can_leave_out_structural_zeros() -> None:
    _, cells = load_wave(3, ROOT)
    magentic = select_cells(cells, framework="autogen", config="guardrail")
    assert len(magentic) == 6 * 5 * 5 + 25
    running = select_cells(cells, framework="autogen", config="guardrail",
                           include_carved_out=False)
    assert len(running) == 3 * 5 * 5 + 25


def test_select_rejects_an_unknown_value_instead_of_selecting_nothing() -> None:
    _, cells = load_wave(1, ROOT)
    with pytest.raises(SabotDataError) as info:
        select_cells(cells, operator="O7")
    assert info.value.field == "operator"
    assert "O1" in info.value.expected
    assert info.value.got == "O7"
