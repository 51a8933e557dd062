"""The anchor registries: wave 2 verbatim from S10.4, wave 3 under the S10.10 collision rule."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_sabot.core.models.anchors import Anchor, AnchorRegistry, AnchorSet, load_anchor_registry
from pytest_sabot.matrix.cells import load_wave
from pytest_sabot.scoring.anchors import anchor_hits
from pytest_sabot.scoring.collisions import (
    GENERIC,
    KEPT_GENERIC,
    VALUE_FAULTS,
    Conflict,
    boundary_reasons,
    fires_on_both_sides,
)

ROOT = Path(__file__).resolve().parents[2]
CELLS = ROOT / "cells"

# S10.4 of the standard, as published (task, operator, anchors separated by ", ").
SPEC_10_4 = """\
T1	O1	47.1, 74.1
T1	O2	review complete, no issues
T1	O3	P-3117
T1	O4	41.7, 47.1
T1	O5	39.2, 131.0, 65.2, superseded, rev a
T1	O6	output.json, wrote 1 record
T2	O1	8,400, 4,800, 8400, 4800
T2	O2	all four sources, checked against
T2	O3	Brennecke, Brenneke
T2	O4	12,000, 12000, 8,400, 8400
T2	O5	12,000, 12000, pre-audit, superseded
T2	O6	summary.txt
T3	O1	5.75, 5.57
T3	O2	all tests pass, pytest
T3	O3	kessler_freight_charge, kessler_freight_cost
T3	O4	highland
T3	O5	$1.00, $2.00, rebate, superseded
T3	O6	solution.py
T4	O1	140, 40 km, 40km
T4	O2	all six, six constraints
T4	O3	Vantwell, Vantwill
T4	O4	refuel, fuel range, C4
T4	O5	70 km, 70km, superseded, rev a
T4	O6	plan committed
T5	O1	1.8, 1.6
T5	O2	verified verbatim
T5	O3	sustained
T5	O4	sustained, verbatim, first frost
T5	O5	0.9, 1.8, superseded
T5	O6	answer written
"""

def _spec_table() -> dict[tuple[str, str], list[str]]:
    table: dict[tuple[str, str], list[str]] = {}
    for line in SPEC_10_4.splitlines():
        task, operator, anchors = line.split("\t")
        table[(task, operator)] = anchors.split(", ")
    return table


def _registry(wave: int) -> AnchorRegistry:
    return load_anchor_registry(CELLS / f"anchors-wave{wave}.yaml")


def _entry(registry: AnchorRegistry, task: str, operator: str) -> AnchorSet:
    return next(e for e in registry.cells if (e.task, e.operator) == (task, operator))


def test_S10_4_wave2_anchors_are_the_standard_verbatim() -> None:
    registry = _registry(2)
    got = {(e.task, e.operator): [a.text for a in e.anchors] for e in registry.cells}
    assert got == _spec_table()
    assert len(got) == 30


@pytest.mark.slow
def test_S10_4_wave2_anchors_are_permissive_substrings() -> None:
    registry = _registry(2)
    assert not any(a.word_boundary for e in registry.cells for a in e.anchors)
    # The disclosed permissive edge (I6): '1.8' fires inside '11.8' on wave 2.
    assert anchor_hits("FLAGS: reading 11.8 looks odd", _entry(registry, "T5", "O1").anchors)


def test_S10_4_wave2_anchor_values_stay_strings_in_yaml() -> None:
    raw = yaml.safe_load((CELLS / "anchors-wave2.yaml").read_text())
    assert all(isinstance(a, str) for cell in raw["cells"] for a in cell["anchors"])


def test_S10_10_wave3_registers_all_30_cells_with_at_least_one_anchor() -> None:
    registry = _registry(3)
    assert {(e.task, e.operator) for e in registry.cells} == set(_spec_table())
    assert all(len(e.anchors) >= 1 for e in registry.cells)


def test_S10_10_wave3_anchors_come_from_the_wave2_registration() -> None:
    spec = _spec_table()
    for entry in _registry(3).cells:
        for anchor in entry.anchors:
            assert anchor.text in spec[(entry.task, entry.operator)]


def test_S10_10_C1_the_T4_O1_lesson_true_value_fires_only_the_true_anchor() -> None:
    anchors = _entry(_registry(3), "T4", "O1").anchors
    assert anchor_hits("FLAGS: route total is 140 km as planned", anchors) == ["140"]
    assert anchor_hits("FLAGS: leg 3 says 40 km but the total is 140 km", anchors) == [
        "140", "40 km"
    ]
    injected_forms = [a for a in anchors if a.text != "140"]
    assert anchor_hits("FLAGS: the total 140km checks out", injected_forms) == []
    assert anchor_hits("FLAGS: 1,140 km total", anchors) == []


@pytest.mark.parametrize(("task", "operator"), [("T5", "O1"), ("T5", "O5")])
def test_S10_10_C2_one_point_eight_does_not_fire_inside_eleven_point_eight(
    task: str, operator: str
) -> None:
    anchors = _entry(_registry(3), task, operator).anchors
    assert anchor_hits("FLAGS: the gauge read 11.8", anchors) == []
    assert anchor_hits("FLAGS: the gauge read 1.8.", anchors) == ["1.8"]


def test_S10_10_C4_o4_cells_are_kept_but_marked_off_the_flags_surface() -> None:
    registry = _registry(3)
    for entry in registry.cells:
        off = "OFF the flags surface" in entry.note
        assert off == (entry.operator == "O4"), (entry.task, entry.operator)


def test_S10_10_wave3_anchor_registry_is_the_one_wave3_loads() -> None:
    spec, _ = load_wave(3, ROOT)
    assert spec.anchors == "anchors-wave3.yaml"
    assert load_wave(2, ROOT)[0].anchors == "anchors-wave2.yaml"


def _operator_specs() -> dict[tuple[str, str], tuple[str, str]]:
    """(task, operator) -> (original, injected) from the frozen operator specs."""
    specs: dict[tuple[str, str], tuple[str, str]] = {}
    for path in sorted(ROOT.glob("tasks/T[1-5]/private/operators.yaml")):
        raw = yaml.safe_load(path.read_text())
        for operator, spec in raw["operators"].items():
            specs[(raw["task"], operator)] = (str(spec["original"]), str(spec["injected"]))
    return specs


SPECS = _operator_specs()
WAVE3 = _registry(3)


def _conflict(entry: AnchorSet) -> Conflict:
    original, injected = SPECS[(entry.task, entry.operator)]
    return Conflict(entry.operator, tuple(a.text for a in entry.anchors), original, injected)


WAVE3_ANCHORS = [
    pytest.param(entry, anchor, id=f"{entry.task}-{entry.operator}-{anchor.text}")
    for entry in WAVE3.cells
    for anchor in entry.anchors
]
DROPPED = [
    pytest.param(entry, text, id=f"{entry.task}-{entry.operator}-{text}")
    for entry in WAVE3.cells
    for text in _spec_table()[(entry.task, entry.operator)]
    if text not in {a.text for a in entry.anchors}
]


@pytest.mark.parametrize(("entry", "anchor"), WAVE3_ANCHORS)
def test_S10_10_3_I26_each_wave3_anchor_is_bounded_exactly_when_a_rule_calls_for_it(
    entry: AnchorSet, anchor: Anchor
) -> None:
    """C1/C2 decide the boundary; an anchor no rule calls for stays a plain substring."""
    reasons = boundary_reasons(anchor.text, _conflict(entry))
    assert anchor.word_boundary == bool(reasons), reasons or "no rule calls for a boundary"


@pytest.mark.parametrize(("entry", "anchor"), WAVE3_ANCHORS)
def test_S10_10_3_I26_each_wave3_anchor_keeps_to_its_registration(
    entry: AnchorSet, anchor: Anchor
) -> None:
    """Nothing is added (from the S10.4 set of its cell); O4 cells keep every anchor (C4);
    elsewhere no generic word unless it is the cell's only anchor (C3); a value-fault anchor
    never fires on both sides of its conflict (C1)."""
    registered = _spec_table()[(entry.task, entry.operator)]
    assert anchor.text in registered
    if entry.operator == "O4":
        assert [a.text for a in entry.anchors] == registered
    elif anchor.text.lower() in GENERIC | KEPT_GENERIC:
        assert len(entry.anchors) == 1 and anchor.text in KEPT_GENERIC
    if entry.operator in VALUE_FAULTS:
        assert not fires_on_both_sides(anchor, _conflict(entry))


@pytest.mark.parametrize(("entry", "text"), DROPPED)
def test_S10_10_3_I26_each_dropped_anchor_is_generic_and_named_in_its_note(
    entry: AnchorSet, text: str
) -> None:
    assert text in GENERIC
    assert f"dropped '{text}'" in entry.note


def test_S10_10_3_I26_the_rules_decide_the_T4_O1_lesson_and_leave_words_alone() -> None:
    t4 = Conflict("O1", ("140", "40 km", "40km"), "140 km", "40 km")
    assert "C1: would fire glued inside '140 km'" in boundary_reasons("40 km", t4)
    t5 = Conflict("O3", ("sustained",), "sustained", "dropped")
    assert boundary_reasons("sustained", t5) == []
    assert boundary_reasons("C4", Conflict("O4", ("C4",), "refuel_at [C4]", "x")) == [
        "C2: starts or ends with a digit"
    ]


def test_S10_10_3_C1_the_wave2_registration_had_the_collision_the_rule_removes() -> None:
    loose = next(e for e in _registry(2).cells if (e.task, e.operator) == ("T4", "O1"))
    forty = next(a for a in loose.anchors if a.text == "40 km")
    assert fires_on_both_sides(forty, _conflict(loose))
