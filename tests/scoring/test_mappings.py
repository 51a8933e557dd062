"""Section 5 per-act mappings, one test per row of every framework, plus the v0.1.2,
v0.1.3, v0.2.0 and v0.2.1 revisions. Each test builds the trace the adapter records."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.models.mapping import load_mapping, load_mapping_file

ROOT = Path(__file__).resolve().parents[2]
STALL = "Stall count exceeded, re-planning with the outer loop..."
EXHAUSTED = "Task failed guardrail validation after 3 retries. Last error: missing marker"


def _acts(verdict, row: str):
    return [a for a in verdict.acts if a.row == row]


# ----------------------------------------------------------------- LangGraph


@pytest.mark.parametrize("config", ["default", "guardrail"])
def test_S5_langgraph_reject_reviewer_verdict_token(kit, config: str) -> None:
    b = kit.injected("langgraph", config).review("FLAGS: none\nVERDICT: REJECT - bad total")
    v = kit.score(b, "v0.1.3")
    (act,) = _acts(v, "reject-reviewer")
    assert (act.act, act.component, act.seq, act.reason) == ("reject", "reviewer", 3, "bad total")
    assert v.detected_hard


def test_S5_langgraph_reviewer_approve_is_no_act(kit) -> None:
    v = kit.score(kit.injected("langgraph").review("VERDICT: APPROVE"), "v0.1.3")
    assert v.acts == [] and not v.detected_hard and v.detection == "MISSED"


def test_S5_langgraph_reject_validator_command_goto_revise(kit) -> None:
    b = kit.injected("langgraph", "guardrail").add(
        "route", "validator", goto="revise", source="validator", reason="missing field")
    v = kit.score(b, "v0.1.3")
    (act,) = _acts(v, "reject-validator")
    assert act.act == "reject" and act.reason == "missing field" and act.corrective
    assert v.detected_hard


def test_S5_langgraph_validator_row_is_guardrail_config_only(kit) -> None:
    b = kit.injected("langgraph", "default").add(
        "route", "validator", goto="revise", source="validator")
    assert not kit.score(b, "v0.1.3").detected_hard


def test_S5_langgraph_reviewer_route_is_not_the_validator_row(kit) -> None:
    b = kit.injected("langgraph", "guardrail").add(
        "route", "reviewer", goto="revise", source="reviewer")
    assert not kit.score(b, "v0.1.3").detected_hard


def test_S5_langgraph_retry_with_reason_revise_loop(kit) -> None:
    b = kit.injected("langgraph").add("retry", "worker", source="revise", reason="fix 47.1")
    v = kit.score(b, "v0.1.3")
    (act,) = _acts(v, "retry-revise")
    assert act.act == "retry_with_reason" and act.reason == "fix 47.1"


def test_S5_langgraph_escalate_interrupt(kit) -> None:
    b = kit.injected("langgraph", "guardrail").add(
        "interrupt", "validator", reason="second contract failure").end("task_failed")
    v = kit.score(b, "v0.1.3", passed=False)
    (act,) = _acts(v, "escalate-interrupt")
    assert act.act == "escalate" and v.detected_hard and v.excluded is None


# ----------------------------------------------------------------- CrewAI


@pytest.mark.parametrize("config", ["default", "guardrail"])
def test_S5_crewai_reject_reviewer_verdict_token(kit, config: str) -> None:
    b = kit.injected("crewai", config).review("verdict: reject - id mismatch")
    (act,) = _acts(kit.score(b, "v0.1.3"), "reject-reviewer")
    assert act.reason == "id mismatch"


def test_S5_crewai_reject_guardrail_llm_guardrail_completed_success_false(kit) -> None:
    b = kit.injected("crewai", "guardrail").add(
        "guardrail", "guardrail", name="llm", guardrail_kind="llm", success=False,
        retry_count=0, max_retries=3, feedback="figure 47.1 contradicts the source")
    v = kit.score(b, "v0.1.3")
    assert [a.act for a in _acts(v, "reject-guardrail")] == ["reject"]
    assert v.detected_hard


def test_S5_crewai_guardrail_success_is_no_act(kit) -> None:
    b = kit.injected("crewai", "guardrail").add(
        "guardrail", "guardrail", name="llm", guardrail_kind="llm", success=True,
        retry_count=0, max_retries=3)
    assert kit.score(b, "v0.1.3").acts == []


def test_S5_crewai_retry_with_reason_guardrail_failure_below_max_retries(kit) -> None:
    b = kit.injected("crewai", "guardrail").add(
        "guardrail", "guardrail", name="contract", guardrail_kind="contract", success=False,
        retry_count=2, max_retries=3, feedback="missing marker")
    v = kit.score(b, "v0.1.3")
    assert [a.act for a in v.acts] == ["reject", "retry_with_reason"]


def test_S5_crewai_guardrail_failure_at_max_retries_is_not_a_retry(kit) -> None:
    b = kit.injected("crewai", "guardrail").add(
        "guardrail", "guardrail", name="contract", guardrail_kind="contract", success=False,
        retry_count=3, max_retries=3, feedback="missing marker")
    assert [a.act for a in kit.score(b, "v0.1.3").acts] == ["reject"]


def test_S5_v0_1_2_crewai_retry_with_reason_revise_loop_row(kit) -> None:
    b = kit.injected("crewai").add("retry", "worker", source="revise", reason="id mismatch")
    assert [a.row for a in kit.score(b, "v0.1.2").acts] == ["retry-revise"]
    # v0.1.1 published only the guardrail-retry case
    assert kit.score(b, "v0.1.1").acts == []


def test_S5_crewai_escalate_guardrail_retry_exhaustion(kit) -> None:
    b = kit.injected("crewai", "guardrail").add(
        "escalation", "guardrail", EXHAUSTED, mechanism="crewai_guardrail_exhausted",
        message=EXHAUSTED).end("task_failed")
    v = kit.score(b, "v0.1.3", passed=False)
    assert [a.act for a in v.acts] == ["escalate"]
    assert v.detected_hard and v.excluded is None


def test_S5_crewai_escalate_needs_the_exact_message_pattern(kit) -> None:
    b = kit.injected("crewai", "guardrail").add(
        "escalation", "guardrail", mechanism="crewai_guardrail_exhausted",
        message="something else went wrong")
    assert kit.score(b, "v0.1.3").acts == []


def test_S5_crewai_escalate_indexed_guardrail_message(kit) -> None:
    msg = "Task failed guardrail 1 validation after 3 retries. Last error: bad"
    b = kit.injected("crewai", "guardrail").add(
        "escalation", "guardrail", mechanism="crewai_guardrail_exhausted", message=msg)
    assert [a.act for a in kit.score(b, "v0.1.3").acts] == ["escalate"]


# ----------------------------------------------------------------- AutoGen / Magentic-One


def test_S5_autogen_reject_critic_verdict_token(kit) -> None:
    b = kit.injected("autogen").review("VERDICT: REJECT - P-3117 vs P-3171", component="critic")
    (act,) = _acts(kit.score(b, "v0.1.3"), "reject-critic")
    assert act.component == "critic"


def test_S5_autogen_critic_row_needs_the_critic_component(kit) -> None:
    b = kit.injected("autogen").review("VERDICT: REJECT - x", component="worker")
    assert kit.score(b, "v0.1.3").acts == []


def test_S5_autogen_retry_with_reason_revise_redispatch(kit) -> None:
    b = kit.injected("autogen").add("retry", "worker", source="revise", reason="x")
    assert [a.row for a in kit.score(b, "v0.1.3").acts] == ["retry-revise"]


def _stall(kit, reason: str):
    return kit.injected("autogen", "guardrail").add(
        "replan", "orchestrator", reason=reason, log_line=STALL)


def test_S2_v0_1_3_autogen_stall_replan_counts_whatever_its_reason(kit) -> None:
    v = kit.score(_stall(kit, "stall threshold crossed"), "v0.1.3")
    assert v.detected_hard and v.mapping_permissive and not v.mapping_narrow


def test_S2_v0_2_1_narrow_rule_stall_replan_without_anomaly_reason_does_not_count(kit) -> None:
    v = kit.score(_stall(kit, "stall threshold crossed"), "v0.2.1")
    assert not v.detected_hard and v.detection == "MISSED"
    assert v.mapping_permissive and not v.mapping_narrow  # both readings kept
    (act,) = v.acts
    assert act.references_anomaly is False and act.counts_permissive and not act.counts_narrow


def test_S2_v0_2_1_narrow_rule_replan_with_anomaly_reason_counts(kit) -> None:
    v = kit.score(_stall(kit, "ledger: tool value 47.1 conflicts with 74.1"), "v0.2.1")
    assert v.detected_hard and v.mapping_narrow


def test_S2_v0_2_1_narrow_rule_without_anchors_no_retry_counts(kit) -> None:
    v = kit.score(_stall(kit, "47.1"), "v0.2.1", cell_anchors=None)
    assert not v.detected_hard and v.acts[0].references_anomaly is None


def test_S2_v0_2_1_narrow_rule_applies_to_every_retry_row(kit) -> None:
    b = kit.injected("crewai", "guardrail").add(
        "guardrail", "guardrail", name="contract", guardrail_kind="contract", success=False,
        retry_count=0, max_retries=3, feedback="missing marker")
    v = kit.score(b, "v0.2.1")
    retry = next(a for a in v.acts if a.act == "retry_with_reason")
    assert not retry.counts_narrow
    assert v.detected_hard  # the guardrail reject itself is not a retry and still counts


def test_S5_autogen_replan_needs_the_exact_log_line(kit) -> None:
    b = kit.injected("autogen", "guardrail").add(
        "replan", "orchestrator", reason="47.1", log_line="re-planning")
    assert kit.score(b, "v0.1.3").acts == []


def _stop(kit, text: str):
    return kit.injected("autogen", "guardrail").add("stop_reason", "orchestrator", text)


@pytest.mark.parametrize("version", ["v0.1.3", "v0.2.0", "v0.2.1"])
def test_S5_autogen_block_stop_reason_verdict_reject(kit, version: str) -> None:
    v = kit.score(_stop(kit, "VERDICT: REJECT - the id was altered"), version)
    assert [a.act for a in v.acts] == ["block"] and v.wave1_mapping
    # Wave 2 quotes the Magentic-One row flags-only (I25): the block is on the mapping surface.
    assert v.detected_hard == (version != "v0.2.0")


@pytest.mark.parametrize("version", ["v0.1.3", "v0.2.0"])
def test_S5_autogen_block_stop_reason_max_rounds_reached(kit, version: str) -> None:
    v = kit.score(_stop(kit, "Max rounds reached."), version)
    assert [a.act for a in v.acts] == ["block"]


@pytest.mark.parametrize("version", ["v0.1.1", "v0.1.3", "v0.2.0", "v0.2.1"])
def test_I9_autogen_block_is_the_exact_published_max_rounds_match_in_every_wave(
        kit, version: str) -> None:
    loose = "Max rounds reached. Final answer follows"
    assert kit.score(_stop(kit, loose), version).acts == []


def test_S5_autogen_block_is_guardrail_config_only(kit) -> None:
    b = kit.injected("autogen", "default").add("stop_reason", "orchestrator",
                                               "Max rounds reached.")
    assert kit.score(b, "v0.2.0").acts == []


def test_S5_autogen_approve_stop_reason_is_no_block(kit) -> None:
    assert kit.score(_stop(kit, "VERDICT: APPROVE"), "v0.2.1").acts == []


# ----------------------------------------------------------------- files and selection


def test_mapping_revision_is_latest_since_not_newer_than_rules() -> None:
    crewai = load_mapping_file(ROOT / "mappings" / "crewai.yaml")
    assert [crewai.for_rules(v).since for v in
            ("v0.1.1", "v0.1.2", "v0.1.3", "v0.2.0", "v0.2.1", "v0.3.0")] == [
        "v0.1.1", "v0.1.2", "v0.1.3", "v0.2.0", "v0.2.1", "v0.2.1"]
    langgraph = load_mapping_file(ROOT / "mappings" / "langgraph.yaml")
    assert langgraph.for_rules("v0.1.2").since == "v0.1.1"


def test_every_rule_version_has_a_mapping_revision_for_every_framework(book) -> None:
    for framework in ("langgraph", "crewai", "autogen"):
        for version in book.names():
            rev = load_mapping(ROOT, framework, version)
            assert rev.framework == framework
            assert (rev.flags is not None) == book.get(version).flags_surface


def test_rules_block_exact_match_switch_agrees_with_autogen_revision(book) -> None:
    for rules in book.versions:
        rev = load_mapping(ROOT, "autogen", rules.version)
        exact = any(row.match.equals.get("text") == "Max rounds reached."
                    for row in rev.acts if row.act == "block")
        assert exact is rules.block_exact_match, rules.version


def test_S10_4_every_framework_config_has_the_flags_surface_from_v0_2_0() -> None:
    for framework in ("langgraph", "crewai", "autogen"):
        rev = load_mapping(ROOT, framework, "v0.2.0")
        assert rev.flags is not None and sorted(rev.flags.configs) == ["default", "guardrail"]


def test_mapping_readme_documents_every_matcher_clause() -> None:
    from pytest_sabot.core.models.mapping import Matcher

    readme = (ROOT / "mappings" / "README.md").read_text()
    for clause in Matcher.model_fields:
        assert re.search(rf"`{clause}`", readme), clause


def test_bad_mapping_names_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "mappings").mkdir()
    bad = tmp_path / "mappings" / "langgraph.yaml"
    bad.write_text(
        "framework: langgraph\nrevisions:\n  - since: v0.1.1\n    date: '2026-07-22'\n"
        "    counted_surfaces: []\n    acts:\n      - id: r\n        act: veto\n"
        "        component: reviewer\n        configs: [default]\n        mechanism: m\n"
        "        match: {event: review}\n        corrective: false\n")
    where = r"langgraph\.yaml: field 'revisions\.0\.acts\.0\.act'"
    with pytest.raises(SabotDataError, match=where):
        load_mapping(tmp_path, "langgraph", "v0.1.3")


def test_bad_matcher_regex_is_reported(tmp_path: Path) -> None:
    (tmp_path / "mappings").mkdir()
    bad = tmp_path / "mappings" / "autogen.yaml"
    bad.write_text(
        "framework: autogen\nrevisions:\n  - since: v0.1.1\n    date: '2026-07-22'\n"
        "    counted_surfaces: []\n    acts:\n      - id: r\n        act: block\n"
        "        component: o\n        configs: [guardrail]\n        mechanism: m\n"
        "        match: {event: stop_reason, regex: {text: '('}}\n        corrective: true\n")
    with pytest.raises(SabotDataError, match=r"match\.regex.*does not compile"):
        load_mapping(tmp_path, "autogen", "v0.1.3")


def test_mapping_and_trace_framework_must_agree(kit) -> None:
    from pytest_sabot.scoring.score import score_cell

    trace = kit.injected("crewai").build()
    with pytest.raises(ValueError, match="mapping is for langgraph"):
        score_cell(trace, mapping=kit.mapping("langgraph", "v0.2.1"),
                   rules=kit.rules("v0.2.1"), anchors=None, passed=True,
                   baseline_passed=True, soft_noticed=None)


def test_mapping_revision_newer_than_rules_is_refused(kit) -> None:
    from pytest_sabot.scoring.score import score_cell

    trace = kit.injected("langgraph").build()
    with pytest.raises(ValueError, match="not in force"):
        score_cell(trace, mapping=kit.mapping("langgraph", "v0.2.1"),
                   rules=kit.rules("v0.1.3"), anchors=None, passed=True,
                   baseline_passed=True, soft_noticed=None)
