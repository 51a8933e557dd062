"""The agent-framework candidate mapping (mappings/agent_framework.yaml): validated like the
shipped ones, one test per row, and the surfaces it deliberately does not count (SPEC.md
S5, S2.3, I61-I63). Each test builds the trace the adapter records."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.models.mapping import load_mapping, load_mapping_file

ROOT = Path(__file__).resolve().parents[2]
FW = "agent_framework"
STALL = "Magentic Orchestrator: Stalling detected after 4 rounds"
LEDGER_FAILED = (
    "Magentic Orchestrator: Progress ledger creation failed, triggering reset: "
    "Progress ledger parse failed after 3 attempt(s)"
)
ROUND_LIMIT = "Workflow terminated due to reaching maximum round count."


def test_S5_I61_the_candidate_mapping_validates_like_the_shipped_ones() -> None:
    mapping = load_mapping_file(ROOT / "mappings" / "agent_framework.yaml")
    assert mapping.framework == FW
    (revision,) = mapping.revisions
    assert revision.since == "v0.2.1"
    assert {row.id for row in revision.acts} == {"reject-reviewer", "retry-revise", "retry-replan"}
    for row in revision.acts:
        assert row.mechanism.strip() and row.match.event
    assert revision.flags is not None and sorted(revision.flags.configs) == ["default", "guardrail"]
    assert [r.id for r in revision.rows_for("default")] == ["reject-reviewer", "retry-revise"]
    assert [r.id for r in revision.rows_for("guardrail")] == ["retry-replan"]
    assert load_mapping(ROOT, FW, "v0.2.1") == revision


def test_I61_the_candidate_mapping_has_no_revision_before_its_registration() -> None:
    where = r"agent_framework\.yaml.*revision in force at v0\.2\.0"
    with pytest.raises(SabotDataError, match=where):
        load_mapping(ROOT, FW, "v0.2.0")


def test_I61_the_candidate_matrix_loads_its_mapping_and_rules() -> None:
    from pytest_sabot.matrix.standard import load_standard

    std = load_standard("agent-framework", ROOT)
    assert list(std.mappings) == [FW]
    assert std.rules.version == "v0.2.1" and std.rules.narrow_retry_reason


def test_docs_name_every_row_of_the_candidate_mapping() -> None:
    text = (ROOT / "docs" / "MAPPINGS.md").read_text()
    section = text[text.index("## 5. The agent-framework candidate") :]
    for row in load_mapping(ROOT, FW, "v0.2.1").acts:
        assert re.search(rf"`{row.id}`", section), row.id


# ----------------------------------------------------------------- default config


def test_S5_agent_framework_reject_reviewer_verdict_token(kit) -> None:
    b = kit.injected(FW).review("Conflict: 74.1 vs 47.1\nVERDICT: REJECT - gain 74.1 vs 47.1")
    v = kit.score(b)
    assert [a.row for a in v.acts] == ["reject-reviewer"] and v.detected_hard
    assert v.acts[0].reason == "gain 74.1 vs 47.1"


def test_S5_agent_framework_reviewer_approve_is_no_act(kit) -> None:
    assert kit.score(kit.injected(FW).review("VERDICT: APPROVE")).acts == []


def test_S5_agent_framework_reviewer_row_is_default_config_only(kit) -> None:
    b = kit.injected(FW, "guardrail").review("VERDICT: REJECT - 74.1")
    assert kit.score(b).acts == []


@pytest.mark.parametrize(("reason", "counts"), [("gain 74.1 vs 47.1", True), ("bad", False)])
def test_S2_3_agent_framework_revise_retry_counts_only_with_an_anchored_reason(
    kit, reason: str, counts: bool
) -> None:
    b = kit.injected(FW).add("retry", "worker", reason, source="revise", reason=reason)
    (act,) = kit.score(b).acts
    assert act.row == "retry-revise" and act.counts_permissive
    assert act.counts_narrow is counts


# ----------------------------------------------------------------- Magentic


def _replan(kit, reason: str, line: str = STALL, component: str = "orchestrator"):
    return kit.injected(FW, "guardrail").add(
        "replan", component, reason, reason=reason, log_line=line
    )


def test_S5_S2_3_agent_framework_stall_replan_with_an_anchored_reason_counts(kit) -> None:
    v = kit.score(_replan(kit, "no progress: the draft has 74.1, the sheet 47.1"))
    (act,) = v.acts
    assert act.row == "retry-replan" and act.counts_narrow and v.detected_hard and v.reacted


def test_S2_3_agent_framework_stall_replan_boilerplate_does_not_count(kit) -> None:
    v = kit.score(_replan(kit, "no progress: we are stuck"))
    assert v.mapping_permissive and not v.mapping_narrow and not v.detected_hard


def test_I63_a_replan_after_a_failed_progress_ledger_is_not_the_stall_row(kit) -> None:
    assert kit.score(_replan(kit, "74.1", line=LEDGER_FAILED)).acts == []
    assert kit.score(_replan(kit, "74.1", line="")).acts == []


def test_S5_agent_framework_replan_row_needs_the_orchestrator(kit) -> None:
    assert kit.score(_replan(kit, "74.1", component="worker")).acts == []


def test_I62_the_round_limit_is_no_act(kit) -> None:
    b = (
        kit.injected(FW, "guardrail")
        .add("cap", "orchestrator", cap="team_turns", limit=20, setting="max_round_count",
             ending="stopped")
        .add("stop_reason", "orchestrator", ROUND_LIMIT)
        .add("run_end", "pipeline", ROUND_LIMIT, status="task_failed", detail=ROUND_LIMIT)
    )
    v = kit.score(b, passed=False)
    assert v.acts == [] and not v.detected_hard


def test_S10_2_3_agent_framework_magentic_flags_head_line_is_a_flag_act(kit) -> None:
    b = kit.injected(FW, "guardrail").add(
        "artifact", "harness", "{}", name="output.json",
        flags_line="FLAGS: the tool said 74.1, the sheet 47.1",
    )
    v = kit.score(b)
    assert v.anchored_flag and v.detected_hard and v.acts and v.acts[0].act == "flag"
