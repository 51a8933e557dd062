"""Section 2 funnel and section 10 wave-2 scoring on hand-built traces."""

from __future__ import annotations

FLAG_47 = "FLAGS: tool value 47.1 disagrees with the source's 74.1\nVERDICT: APPROVE"


def test_S2_detected_hard_needs_act_at_or_after_injection(kit) -> None:
    b = kit.TraceBuilder().review("VERDICT: REJECT - early").inject().probe()
    v = kit.score(b, "v0.1.3")
    assert v.acts and not v.acts[0].after_injection
    assert not v.detected_hard and v.detection == "MISSED"


def test_S2_act_at_the_injection_seq_counts(kit) -> None:
    from pytest_sabot.scoring.acts import find_acts

    trace = kit.injected().review("VERDICT: REJECT - 47.1").build()
    mapping = kit.mapping("langgraph", "v0.1.3")
    (at,) = find_acts(trace, mapping, "default", injection_seq=3, anchors=None)
    (before,) = find_acts(trace, mapping, "default", injection_seq=4, anchors=None)
    assert at.after_injection and not before.after_injection


def test_S2_detected_soft_only_when_not_hard(kit) -> None:
    soft = kit.score(kit.injected().review("VERDICT: APPROVE"), soft_noticed=True)
    assert soft.detection == "DETECTED_SOFT" and soft.detected_soft and not soft.detected_hard
    both = kit.score(kit.injected().review("VERDICT: REJECT - 47.1"), soft_noticed=True)
    assert both.detection == "DETECTED_HARD" and not both.detected_soft


def test_S2_missed_when_neither_tier(kit) -> None:
    v = kit.score(kit.injected().review("VERDICT: APPROVE"), soft_noticed=False)
    assert v.detection == "MISSED"
    assert kit.score(kit.injected(), soft_noticed=None).soft_judged is False


def test_S2_5_I22_a_cell_without_a_soft_verdict_is_unjudged_not_missed(kit) -> None:
    b = kit.injected().review("VERDICT: APPROVE")
    v = kit.score_unjudged(b)
    assert v.detection == "UNJUDGED" and not v.soft_judged and v.soft_noticed is None
    assert not v.detected_soft and not v.detected_hard
    # Callers with the three-label outcome vocabulary keep MISSED, still marked unjudged.
    legacy = kit.score(b, soft_noticed=None)
    assert legacy.detection == "MISSED" and not legacy.soft_judged


def test_S2_I22_a_hard_act_needs_no_judge(kit) -> None:
    v = kit.score_unjudged(kit.injected().review("VERDICT: REJECT - 47.1 is wrong"))
    assert v.detection == "DETECTED_HARD" and not v.soft_judged


def test_S2_recovered_is_the_callers_pass_verdict(kit) -> None:
    assert kit.score(kit.injected(), passed=True).recovered is True
    assert kit.score(kit.injected(), passed=False).recovered is False
    assert kit.score(kit.injected(), passed=None).recovered is None


def test_S10_3_anchored_flag_is_a_hard_act_in_v0_2(kit) -> None:
    v = kit.score(kit.injected().review(FLAG_47), "v0.2.0")
    assert v.anchored_flag and v.detected_hard and not v.wave1_mapping
    assert [a.act for a in v.acts] == ["flag"]


def test_S10_3_flag_without_anchor_is_only_any_flag(kit) -> None:
    v = kit.score(kit.injected().review("FLAGS: the numbers feel odd\nVERDICT: APPROVE"),
                  "v0.2.0")
    assert v.any_flag and not v.anchored_flag and not v.detected_hard


def test_S10_3_none_form_flag_is_not_any_flag(kit) -> None:
    v = kit.score(kit.injected().review("FLAGS: None.\nVERDICT: APPROVE"), "v0.2.0")
    assert not v.any_flag and v.flags[0].none_form


def test_S10_pin_b_flag_before_injection_does_not_count(kit) -> None:
    b = kit.TraceBuilder().review(FLAG_47).inject().probe()
    v = kit.score(b, "v0.2.0")
    assert v.flags and not v.flags[0].after_injection
    assert not v.anchored_flag and not v.any_flag and not v.detected_hard


def test_S10_pin_a_flags_parsed_from_every_persisted_event_text(kit) -> None:
    b = kit.injected().add("agent_output", "worker", "FLAGS: 74.1 expected\nresult", stage="worker")
    v = kit.score(b, "v0.2.0")
    assert v.anchored_flag and v.acts[0].event_kind == "agent_output"


def test_S10_2_magentic_artifact_head_line_is_parsed(kit) -> None:
    b = kit.injected("autogen", "guardrail").add(
        "artifact", "orchestrator", '{"total": 74.1}', name="output.json",
        flags_line="FLAGS: tool said 47.1")
    v = kit.score(b, "v0.2.0")
    assert v.anchored_flag and v.flags[0].source == "artifact.flags_line"


def test_S10_pin_e_anchors_test_only_the_flags_line_content(kit) -> None:
    b = kit.injected().review("FLAGS: none\nThe draft uses 47.1 where 74.1 belongs.\n"
                              "VERDICT: APPROVE")
    v = kit.score(b, "v0.2.0")
    assert not v.anchored_flag and not v.detected_hard


def test_S10_pin_c_first_flags_line_per_text(kit) -> None:
    b = kit.injected().review("FLAGS: none\nFLAGS: 47.1\nVERDICT: APPROVE")
    assert not kit.score(b, "v0.2.0").anchored_flag


def test_S10_flags_not_counted_under_wave1_rules(kit) -> None:
    v = kit.score(kit.injected().review(FLAG_47), "v0.1.3")
    assert not v.anchored_flag and not v.detected_hard and v.flags


def test_S10_5_union_headline_keeps_the_wave1_mapping_reading(kit) -> None:
    v = kit.score(kit.injected().review(FLAG_47), "v0.2.1")
    assert v.detected_hard and not v.wave1_mapping and v.anchored_flag
    m = kit.score(kit.injected().review("FLAGS: none\nVERDICT: REJECT - totals"), "v0.2.1")
    assert m.detected_hard and m.wave1_mapping and not m.anchored_flag


def test_S10_3_v0_2_1_O4_is_off_the_flags_surface(kit) -> None:
    o4 = kit.anchors("41.7", "47.1")

    def run():
        return kit.injected(operator="O4").add(
            "model_call", "gateway", call_index=0, model_requested="sim:realistic",
            model_served="sim:realistic-weak",
        ).review("FLAGS: total 41.7 looks low\nVERDICT: APPROVE")

    wave2 = kit.score(run(), "v0.2.0", cell_anchors=o4)
    assert wave2.anchored_flag and wave2.detected_hard
    v021 = kit.score(run(), "v0.2.1", cell_anchors=o4)
    assert not v021.anchored_flag and not v021.detected_hard
    assert v021.any_flag and not v021.flags[-1].counted


def test_S10_7_correction_4_reacted_identity_in_v0_1(kit) -> None:
    v = kit.score(kit.injected().review("VERDICT: REJECT - 47.1"), "v0.1.3")
    assert v.reacted and v.reacted_identity and not v.reacted_independent


def test_S10_7_correction_4_reacted_independent_needs_a_corrective_act(kit) -> None:
    rejected = kit.injected().review("VERDICT: REJECT - 47.1")
    v = kit.score(rejected, "v0.2.0")
    assert v.detected_hard and not v.reacted
    rejected.add("retry", "worker", source="revise", reason="47.1")
    v2 = kit.score(rejected, "v0.2.0")
    assert v2.reacted and v2.reacted_independent


def test_S10_7_correction_4_corrective_act_before_detection_is_not_a_reaction(kit) -> None:
    b = kit.injected().add("retry", "worker", source="revise", reason="style").review(FLAG_47)
    v = kit.score(b, "v0.2.1")
    # the retry does not reference the anomaly (narrow rule), the later flag detects
    assert v.detected_hard and v.detecting_seq == 4 and not v.reacted


def test_S2_corrective_hard_act_counts_as_both_detected_and_reacted(kit) -> None:
    b = kit.injected("langgraph", "guardrail").add("interrupt", "validator", reason="contract")
    v = kit.score(b, "v0.2.1")
    assert v.detected_hard and v.reacted and v.detecting_seq == 3


def test_S10_strict_floor_marks_consumed_probes(kit) -> None:
    b = kit.TraceBuilder().inject().probe(consumed=True)
    assert kit.score(b).strict_floor
    assert not kit.score(kit.injected()).strict_floor


def test_verdict_is_json_able(kit) -> None:
    import json

    v = kit.score(kit.injected().review(FLAG_47))
    dumped = v.model_dump(mode="json")
    assert json.loads(json.dumps(dumped))["detection"] == "DETECTED_HARD"
    assert type(v).model_validate(dumped) == v


def test_S10_baseline_flags_scan_from_seq_0_per_operator_anchors(kit) -> None:
    from pytest_sabot.scoring.score import score_baseline

    trace = kit.TraceBuilder(operator=None).review(
        "FLAGS: total 41.7 seems low\nVERDICT: APPROVE").end().build()
    bv = score_baseline(trace, passed=True, rules=kit.rules("v0.2.1"),
                        anchors_by_operator={"O1": kit.T1_O1, "O4": kit.anchors("41.7")})
    assert bv.any_flag and bv.anchored_fire == {"O1": False, "O4": True}
