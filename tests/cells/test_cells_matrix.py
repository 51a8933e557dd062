"""The registered wave matrices (SPEC.md S1.5, S8.1, S8.3, S10.6, S10.9, S10.10)."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from pytest_sabot.core.models.cells import Cell
from pytest_sabot.matrix.cells import load_wave, runnable, select_cells

ROOT = Path(__file__).resolve().parents[2]
ID_FORMAT = re.compile(
    r"^(langgraph|crewai|autogen)-(default|guardrail)-(O[1-6]|baseline)-T[1-5]-s\d+$"
)


@cache
def _wave(number: int) -> list[Cell]:
    return load_wave(number, ROOT)[1]


def test_S8_1_wave1_is_900_fault_cells_plus_150_baselines() -> None:
    cells = _wave(1)
    faults = [c for c in cells if not c.is_baseline]
    baselines = [c for c in cells if c.is_baseline]
    assert (len(cells), len(faults), len(baselines)) == (1050, 900, 150)
    assert runnable(cells) == cells


@pytest.mark.parametrize("wave", [2, 3])
def test_S10_6_magentic_carve_out_is_75_registered_structural_zeros(wave: int) -> None:
    cells = _wave(wave)
    carved = [c for c in cells if c.carved_out]
    assert len(cells) == 1050
    assert len(carved) == 75
    assert {(c.framework, c.config) for c in carved} == {("autogen", "guardrail")}
    assert {c.operator for c in carved} == {"O2", "O3", "O6"}
    run = runnable(cells)
    assert len(run) == 975
    assert sum(1 for c in run if c.is_baseline) == 150
    assert sum(1 for c in run if not c.is_baseline) == 825


@pytest.mark.parametrize("wave", [2, 3])
def test_S10_6_carve_out_never_removes_a_baseline(wave: int) -> None:
    carved_baselines = [c for c in _wave(wave) if c.carved_out and c.is_baseline]
    assert carved_baselines == []


@pytest.mark.parametrize("wave", [1, 2, 3])
def test_S1_5_cell_ids_are_unique_and_well_formed(wave: int) -> None:
    ids = [c.id for c in _wave(wave)]
    assert len(set(ids)) == len(ids)
    bad = [i for i in ids if not ID_FORMAT.match(i)]
    assert bad == []


def test_S1_5_cell_ids_are_stable() -> None:
    ids = {c.id for c in _wave(2)}
    assert "langgraph-guardrail-O3-T2-s11" in ids
    assert "crewai-default-baseline-T4-s13" in ids
    chosen = select_cells(_wave(2), framework="langgraph", config="guardrail",
                          operator="O3", task="T2", seed=11)
    assert [c.id for c in chosen] == ["langgraph-guardrail-O3-T2-s11"]
    assert chosen[0].baseline_id == "langgraph-guardrail-baseline-T2-s11"


@pytest.mark.parametrize("wave", [1, 2, 3])
def test_S8_1_expansion_is_deterministic_with_baselines_first(wave: int) -> None:
    first = [c.id for c in _wave(wave)]
    second = [c.id for c in load_wave(wave, ROOT)[1]]
    assert first == second
    kinds = [c.is_baseline for c in _wave(wave)]
    assert kinds == sorted(kinds, reverse=True)
    assert kinds[0] and not kinds[-1]


@pytest.mark.parametrize("wave", [1, 2, 3])
def test_S3_1_every_fault_cell_has_its_baseline_in_the_registry(wave: int) -> None:
    cells = _wave(wave)
    baselines = {c.id for c in cells if c.is_baseline}
    orphans = [c.id for c in cells if not c.is_baseline and c.baseline_id not in baselines]
    assert orphans == []


@pytest.mark.parametrize("wave", [1, 2, 3])
def test_S8_3_seeds_never_differ_from_the_registry(wave: int) -> None:
    registry = json.loads((ROOT / "cells" / "seeds" / f"wave{wave}.json").read_text())
    cells = _wave(wave)
    assert registry["wave"] == wave
    assert sorted({c.seed for c in cells}) == sorted(registry["seeds"])
    per_class: dict[tuple[str, str, str | None, str], list[int]] = {}
    for c in cells:
        per_class.setdefault((c.framework, c.config, c.operator, c.task), []).append(c.seed)
    assert all(seeds == registry["seeds"] for seeds in per_class.values())


def test_S10_9_waves_2_and_3_reuse_the_wave1_seeds_for_pairing() -> None:
    def ids_without_wave(wave: int) -> list[str]:
        return [c.id for c in _wave(wave)]

    assert ids_without_wave(1) == ids_without_wave(2) == ids_without_wave(3)
    for wave in (2, 3):
        note = json.loads((ROOT / "cells" / "seeds" / f"wave{wave}.json").read_text())["note"]
        assert "reused on purpose" in note


def test_S11_rule_version_and_protocol_of_each_wave() -> None:
    specs = {w: load_wave(w, ROOT)[0] for w in (1, 2, 3)}
    assert [specs[w].rules for w in (1, 2, 3)] == ["v0.1.3", "v0.2.0", "v0.2.1"]
    assert [specs[w].flags_protocol for w in (1, 2, 3)] == [False, True, True]
    assert [specs[w].contract_revision for w in (1, 2, 3)] == ["v0.1", "v0.2", "v0.2"]
    assert [specs[w].anchors for w in (1, 2, 3)] == [
        None, "anchors-wave2.yaml", "anchors-wave3.yaml"
    ]
    assert all(specs[w].redacted_materials for w in (1, 2, 3))
    assert {c.wave for c in _wave(3)} == {3}
