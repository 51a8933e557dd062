"""I31, I32 and I35 on real runs of wave 1 under the embedded model (sim:realistic): the
LangGraph validator's own count, and a Magentic-One team that runs to the framework's
default round limit with its re-plans read from both surfaces.

Under sim:realistic the weak tier that O4 swaps in keeps failing T2's contract: LangGraph's
reviewer sends it back once, then the validator's first failure sends it back once more
and its second escalates; the Magentic-One orchestrator keeps stalling and re-planning until
the round limit."""

from __future__ import annotations

import pytest
from e2e_bank import CellBank, require_adapter

REALISTIC = "sim:realistic"


def test_I32_the_validators_first_failure_revises_after_the_reviewer_used_its_pass(
    bank: CellBank,
) -> None:
    require_adapter("langgraph")
    rec = bank.run("langgraph-guardrail-O4-T2-s11", REALISTIC)
    assert rec.outcome.error is None, rec.outcome.error
    steps = [
        (e.kind, getattr(e.data, "source", None) or getattr(e.data, "success", None))
        for e in rec.trace.events
        if e.kind in ("review", "guardrail", "route", "retry", "interrupt", "artifact")
    ]
    assert steps == [
        ("review", None),
        ("retry", "revise"),
        ("review", None),
        ("guardrail", False),
        ("route", "validator"),
        ("retry", "revise"),
        ("review", None),
        ("guardrail", False),
        ("interrupt", None),
    ]
    verdict = bank.verdict(rec)
    rows = {act.row for act in verdict.acts}
    assert {"reject-validator", "escalate-interrupt"} <= rows, rows


@pytest.mark.slow
def test_I31_I35_a_magentic_team_runs_to_the_default_round_limit_and_reads_replans_twice(
    bank: CellBank,
) -> None:
    require_adapter("autogen")
    from pytest_sabot.adapters.autogen.pipeline import MAX_TURNS

    rec = bank.run("autogen-guardrail-O4-T2-s12", REALISTIC)
    assert rec.outcome.error is None, rec.outcome.error
    assert MAX_TURNS == 20
    assert len(rec.trace.of_kind("ledger")) == MAX_TURNS + 1
    assert [e.text for e in rec.trace.of_kind("stop_reason")] == ["Max rounds reached."]
    (cap,) = rec.trace.of_kind("cap")
    assert (cap.data.cap, cap.data.limit, cap.data.setting) == ("team_turns", 20, "max_turns")
    replans = rec.trace.of_kind("replan")
    (check,) = rec.trace.of_kind("surface_check")
    assert replans and check.data.mandated_count == len(replans)
    assert check.data.agree and check.data.other_count == len(replans)
