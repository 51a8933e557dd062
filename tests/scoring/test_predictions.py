"""P1-P5 (standard 10.8) evaluated mechanically from a wave-2 run and its paired wave-1 run
(SPEC I28): held / not held / untestable, with the numbers and interval each rests on."""

from __future__ import annotations

from functools import cache

import pytest

from pytest_sabot.core.models.verdict import CellVerdict
from pytest_sabot.scoring.predictions import evaluate

REVIEWER = {"langgraph-default", "crewai-default"}
SEEDS = (11, 12, 13, 14, 15)


@cache
def _base(kit) -> CellVerdict:
    return kit.score(kit.injected())


def cell(kit, framework: str, config: str, operator: str, task: str, seed: int, *,
         wave: int, hard: bool = False, mapping: bool | None = None, flag: bool = False,
         recovered: bool = True, judged: bool = True, soft: bool = False) -> CellVerdict:
    mapping = hard if mapping is None else mapping
    return _base(kit).model_copy(update={
        "cell_id": f"{framework}-{config}-{operator}-{task}-s{seed}", "wave": wave,
        "framework": framework, "config": config, "operator": operator, "task": task,
        "seed": seed, "row": f"{framework}-{config}", "wave1_mapping": mapping,
        "anchored_flag": flag, "detected_hard": hard, "detected_soft": soft and not hard,
        "recovered": recovered, "soft_judged": judged,
    })


def _by_id(preds):
    return {p.id: p for p in preds}


def test_S10_8_I28_P1_held_when_the_union_lifts_over_the_mapping(kit) -> None:
    two = [cell(kit, "langgraph", "default", op, "T1", s, wave=2, hard=True, mapping=False,
                flag=True) for op in ("O1", "O3", "O5") for s in SEEDS]
    p1 = _by_id(evaluate([], two, reviewer_rows=REVIEWER))["P1"]
    assert p1.status == "held" and p1.estimate == pytest.approx(1.0) and p1.ci_low > 0
    assert "union 15/15 vs wave1_mapping 0/15" in p1.basis


def test_S10_8_I28_P1_null_result_is_not_held(kit) -> None:
    two = [cell(kit, "langgraph", "default", "O1", "T1", s, wave=2, hard=True)
           for s in SEEDS]
    p1 = _by_id(evaluate([], two, reviewer_rows=REVIEWER))["P1"]
    assert p1.status == "not held" and p1.estimate == 0.0


def test_S10_8_I28_P1_only_reviewer_bearing_rows_count(kit) -> None:
    two = [cell(kit, "autogen", "guardrail", "O1", "T1", s, wave=2, hard=True, mapping=False,
                flag=True) for s in SEEDS]
    assert _by_id(evaluate([], two, reviewer_rows=REVIEWER))["P1"].status == "untestable"


def test_S10_8_I28_P2_ceiling_classes_not_reduced(kit) -> None:
    one = [cell(kit, "crewai", "default", "O1", "T2", s, wave=1, hard=True) for s in SEEDS]
    kept = [cell(kit, "crewai", "default", "O1", "T2", s, wave=2, hard=True) for s in SEEDS]
    p2 = _by_id(evaluate(one, kept, reviewer_rows=REVIEWER))["P2"]
    assert p2.status == "held" and p2.estimate == 0.0
    lost = [cell(kit, "crewai", "default", "O1", "T2", s, wave=2) for s in SEEDS]
    p2 = _by_id(evaluate(one, lost, reviewer_rows=REVIEWER))["P2"]
    assert p2.status == "not held" and p2.ci_high < 0
    below = [cell(kit, "crewai", "default", "O1", "T2", s, wave=1, hard=s < 14)
             for s in SEEDS]   # 3/5: not near ceiling
    assert _by_id(evaluate(below, lost, reviewer_rows=REVIEWER))["P2"].status == "untestable"


def test_S10_8_I28_P3_magentic_T1_needs_one_anchored_flag(kit) -> None:
    none = [cell(kit, "autogen", "guardrail", "O1", "T1", s, wave=2) for s in SEEDS]
    assert _by_id(evaluate([], none, reviewer_rows=REVIEWER))["P3"].status == "not held"
    one = [*none[:4], cell(kit, "autogen", "guardrail", "O1", "T1", 15, wave=2, hard=True,
                            mapping=False, flag=True)]
    p3 = _by_id(evaluate([], one, reviewer_rows=REVIEWER))["P3"]
    assert p3.status == "held" and "1/5" in p3.basis and p3.ci_low is not None


@pytest.mark.slow
def test_S10_8_I28_P4_absence_lift_smaller_than_in_view_lift(kit) -> None:
    view = [cell(kit, "langgraph", "default", op, t, s, wave=2, hard=True, mapping=False,
                 flag=True) for op in ("O1", "O3", "O5") for t in ("T1", "T2") for s in SEEDS]
    absent = [cell(kit, "langgraph", "default", op, t, s, wave=2)
              for op in ("O2", "O6") for t in ("T1", "T2") for s in SEEDS]
    p4 = _by_id(evaluate([], view + absent, reviewer_rows=REVIEWER))["P4"]
    assert p4.status == "held" and p4.estimate == pytest.approx(1.0)
    same = [c.model_copy(update={"anchored_flag": True, "detected_hard": True})
            for c in absent]
    assert _by_id(evaluate([], view + same, reviewer_rows=REVIEWER))["P4"].status == "not held"


@pytest.mark.slow
def test_S10_8_I28_P5_rwd_falls_where_detection_rises(kit) -> None:
    keys = [(op, s) for op in ("O1", "O3") for s in SEEDS]
    one = [cell(kit, "langgraph", "default", op, "T1", s, wave=1, recovered=True)
           for op, s in keys]                                  # every one a lucky recovery
    two = [cell(kit, "langgraph", "default", op, "T1", s, wave=2, hard=True)
           for op, s in keys]
    p5 = _by_id(evaluate(one, two, reviewer_rows=REVIEWER))["P5"]
    assert p5.status == "held" and p5.estimate == pytest.approx(-1.0)
    assert "detection rises in langgraph-default" in p5.basis
    flat = [cell(kit, "langgraph", "default", op, "T1", s, wave=2) for op, s in keys]
    assert _by_id(evaluate(one, flat, reviewer_rows=REVIEWER))["P5"].status == "untestable"
    unjudged = [c.model_copy(update={"soft_judged": False}) for c in two]
    p5 = _by_id(evaluate(one, unjudged, reviewer_rows=REVIEWER))["P5"]
    assert p5.status == "untestable" and "judged in both waves" in p5.basis


def test_S10_8_I28_every_prediction_is_reported_even_with_no_data() -> None:
    preds = evaluate([], [], reviewer_rows=REVIEWER)
    assert [p.id for p in preds] == ["P1", "P2", "P3", "P4", "P5"]
    assert {p.status for p in preds} == {"untestable"}
