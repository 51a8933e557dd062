"""The clean-run firing rate (SPEC I27): every no-fault baseline scored for hard-tier acts
with the same mapping, rules and anchors as its paired fault cells, published per row beside
the Sabot Score and never inside it."""

from __future__ import annotations

import pytest

from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.models.verdict import BaselineVerdict
from pytest_sabot.scoring.aggregate import aggregate_rows, scoreboard
from pytest_sabot.scoring.score import score_baseline

REJECT = "FLAGS: none\nVERDICT: REJECT - the draft misses the units line"
APPROVE = "FLAGS: none\nVERDICT: APPROVE"


def _baseline(kit, *reviews: str, framework: str = "langgraph", config: str = "default",
              version: str = "v0.2.1", seed: int = 11, anchors=None, retry: bool = True,
              mapping: bool = True, status: str = "completed", passed: bool = True
              ) -> BaselineVerdict:
    b = kit.TraceBuilder(framework, config, operator=None, seed=seed)
    component = "critic" if framework == "autogen" else "reviewer"
    for text in reviews:
        b.review(text, component=component)
        if retry and "REJECT" in text:
            reason = text.split("REJECT - ", 1)[1]
            b.add("retry", "worker", reason, source="revise", reason=reason)
    trace = b.end(status).build()
    return score_baseline(
        trace,
        passed=passed,
        rules=kit.rules(version),
        anchors_by_operator=anchors if anchors is not None else {
            "O1": kit.T1_O1, "O4": kit.anchors("41.7", "47.1")},
        mapping=kit.mapping(framework, version) if mapping else None,
    )


def test_S2_I27_a_quiet_clean_run_does_not_fire(kit) -> None:
    bv = _baseline(kit, APPROVE)
    assert bv.clean_fire == {"O1": [], "O4": []} and bv.clean_acts == []


@pytest.mark.parametrize(("version", "kinds"), [
    ("v0.2.0", ["reject", "retry_with_reason"]),   # permissive: the retry counts too
    ("v0.2.1", ["reject"]),                        # narrow: its reason quotes no anchor
])
def test_S2_I27_a_reviewer_rejecting_a_clean_first_draft_fires(kit, version: str,
                                                               kinds: list[str]) -> None:
    bv = _baseline(kit, REJECT, APPROVE, version=version)
    assert bv.clean_fire == {"O1": kinds, "O4": kinds}
    assert sorted({a.act for a in bv.clean_acts}) == kinds


def test_S10_3_I27_anchored_flags_count_per_paired_fault_cell(kit) -> None:
    text = "FLAGS: the gain 41.7 looks low\nVERDICT: APPROVE"
    v020 = _baseline(kit, text, version="v0.2.0")
    assert v020.clean_fire == {"O1": [], "O4": ["flag"]}
    v021 = _baseline(kit, text, version="v0.2.1")   # O4 is off the FLAGS surface
    assert v021.clean_fire == {"O1": [], "O4": []}


def test_S5_I27_wave1_without_anchors_scores_for_any_operator(kit) -> None:
    bv = _baseline(kit, REJECT, APPROVE, version="v0.1.3", anchors={})
    assert bv.clean_fire == {"any": ["reject", "retry_with_reason"]}


def test_I27_without_a_mapping_the_baseline_is_not_scored_for_acts(kit) -> None:
    assert _baseline(kit, REJECT, mapping=False).clean_fire is None


def test_I27_the_magentic_row_under_wave2_rules_reads_flags_only(kit) -> None:
    b = kit.TraceBuilder("autogen", "guardrail", operator=None).add(
        "replan", "orchestrator", "stall", reason="stall threshold crossed",
        log_line="Stall count exceeded, re-planning with the outer loop...")
    trace = b.end().build()
    kw = dict(passed=True, anchors_by_operator={"O1": kit.T1_O1})
    v020 = score_baseline(trace, rules=kit.rules("v0.2.0"),
                          mapping=kit.mapping("autogen", "v0.2.0"), **kw)
    v013 = score_baseline(trace, rules=kit.rules("v0.1.3"),
                          mapping=kit.mapping("autogen", "v0.1.3"), **kw)
    assert v020.clean_fire == {"O1": []}                    # quoted flags-only (I25)
    assert v013.clean_fire == {"O1": ["retry_with_reason"]}  # the mapping governs (S2.2)


def test_S2_8_I27_row_rate_with_interval_and_acts_by_type(kit) -> None:
    verdicts = [
        _baseline(kit, REJECT, APPROVE, seed=1),
        _baseline(kit, APPROVE, seed=2),
        _baseline(kit, APPROVE, seed=3),
        _baseline(kit, "FLAGS: 47.1 vs 74.1\nVERDICT: APPROVE", seed=4),
        _baseline(kit, REJECT, seed=5, status="error", passed=False),   # RUN_ERROR: out
        _baseline(kit, REJECT, seed=6, passed=False),                   # failed: a clean run
    ]
    (row,) = aggregate_rows(verdicts)
    c = row.clean_fire
    assert (c.k, c.n) == (3, 5) and c.ci_low is not None and c.ci_high is not None
    assert row.clean_fire_acts == {"flag": 1, "reject": 2}
    assert row.sabot_score.n == 0    # baselines never enter the headline


def test_S10_6_I27_a_carved_out_operator_is_not_a_paired_fault_cell(kit) -> None:
    anchors = {"O1": kit.T1_O1, "O2": kit.anchors("review complete")}
    text = "FLAGS: review complete came back with no report\nVERDICT: APPROVE"
    bv = _baseline(kit, text, framework="autogen", config="default", anchors=anchors)
    assert bv.clean_fire == {"O1": [], "O2": ["flag"]}
    carved = Cell(wave=2, framework="autogen", config="default", operator="O2", task="T1",
                  seed=11, carved_out=True)
    assert aggregate_rows([bv])[0].clean_fire.k == 1
    assert aggregate_rows([bv], carve_outs=[carved])[0].clean_fire.k == 0


def test_I27_rows_carry_the_rate_for_junit(kit) -> None:
    board = scoreboard([_baseline(kit, REJECT, APPROVE)])
    props = dict(board.rows[0].junit_properties())
    assert props["sabot.clean_fire.langgraph-default"] == "1.0000"
    assert props["sabot.clean_fire_n.langgraph-default"] == "1/1"
    assert props["sabot.clean_fire_acts.langgraph-default"] == "reject:1"
    assert props["sabot.score.langgraph-default"] == ""   # no fault cell: n/a, not zero
