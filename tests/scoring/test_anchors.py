"""Section 10.3-10.4 anchors, the T4/O1 trap, and the wave-3 word-boundary option."""

from __future__ import annotations

import pytest

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.models.anchors import Anchor, AnchorRegistry, load_anchor_registry
from pytest_sabot.scoring.anchors import anchor_hits, references_anchor


def _a(*texts: str, wb: bool = False) -> list[Anchor]:
    return [Anchor(text=t, word_boundary=wb) for t in texts]


def test_S10_4_anchors_are_case_insensitive_substrings() -> None:
    assert anchor_hits("the handoff said p-3117", _a("P-3117")) == ["P-3117"]
    assert anchor_hits("Rev A was superseded", _a("superseded", "rev a")) == [
        "superseded", "rev a"]


def test_S10_4_T4_O1_forty_alone_would_fire_inside_the_true_value_140() -> None:
    # Why '40' is not registered: it is a substring of the true value 140, so a flag that
    # merely restates the correct distance would count as noticing the corruption.
    assert references_anchor("distance is 140 km as planned", _a("40"))
    registered = _a("140", "40 km", "40km")
    assert anchor_hits("tool reports 40 km but the map says 140", registered) == [
        "140", "40 km"]
    assert anchor_hits("leg is 40km", registered) == ["40km"]


def test_S10_pin_f_wave2_anchors_have_no_word_boundary() -> None:
    assert references_anchor("value 11.8 noted", _a("1.8"))
    assert references_anchor("distance 1400", _a("140"))


@pytest.mark.parametrize(
    ("anchor", "content", "fires"),
    [
        ("1.8", "value 11.8 noted", False),
        ("1.8", "value 1.85 noted", False),
        ("1.8", "version 0.1.8", False),
        ("1.8", "value was 1.8.", True),
        ("1.8", "(1.8)", True),
        ("140", "distance 1400", False),
        ("140", "distance 140.5", False),
        ("140", "distance 1,140", False),
        ("140", "distance 140, not 40", True),
        ("8,400", "18,400 units", False),
        ("8,400", "8,400 units", True),
        ("P-3117", "P-31170", False),
        ("P-3117", "id P-3117;", True),
    ],
)
def test_S10_wave3_word_boundary_anchor(anchor: str, content: str, fires: bool) -> None:
    assert references_anchor(content, _a(anchor, wb=True)) is fires


def test_S10_3_no_anchors_means_no_reference() -> None:
    assert not references_anchor("47.1", None)
    assert not references_anchor("47.1", [])


def test_anchor_registry_accepts_strings_and_mappings() -> None:
    reg = AnchorRegistry.model_validate({
        "registry": "wave-3", "registered": "2026-07-25",
        "cells": [{"task": "T5", "operator": "O1",
                   "anchors": [{"text": "1.8", "word_boundary": True}, "1.6"]}],
    })
    got = reg.for_cell("T5", "O1")
    assert got == [Anchor(text="1.8", word_boundary=True), Anchor(text="1.6")]
    assert reg.for_cell("T5", "O2") is None
    assert reg.missing(["T5"], ["O1", "O2"]) == [("T5", "O2")]


def test_anchor_registry_rejects_duplicate_cells_and_unquoted_numbers(tmp_path) -> None:
    dup = tmp_path / "dup.yaml"
    dup.write_text("registry: x\nregistered: '2026-07-25'\ncells:\n"
                   "  - {task: T1, operator: O1, anchors: ['1']}\n"
                   "  - {task: T1, operator: O1, anchors: ['2']}\n")
    with pytest.raises(SabotDataError, match=r"dup\.yaml.*registered twice"):
        load_anchor_registry(dup)
    num = tmp_path / "num.yaml"
    num.write_text("registry: x\nregistered: '2026-07-25'\ncells:\n"
                   "  - {task: T4, operator: O1, anchors: [140]}\n")
    with pytest.raises(SabotDataError, match=r"num\.yaml: field 'cells\.0\.anchors'.*quoted"):
        load_anchor_registry(num)
