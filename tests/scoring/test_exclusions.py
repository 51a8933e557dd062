"""Section 3 exclusions, the v0.1.3 precedence, and the 10.7 O4 landing probe."""

from __future__ import annotations

import pytest

EXHAUSTED = "Task failed guardrail validation after 3 retries. Last error: bad"


def _downgraded_call(b, served: str = "sim:realistic-weak", *, downgraded: bool = True,
                     error: str | None = None):
    """A model_call as the gateway records it: the frameworks request the standard's model
    name, the embedded model answers as its persona (SPEC I18)."""
    return b.add("model_call", "worker", call_index=0, model_requested="gpt-5.6-terra",
                 model_served=served, downgraded=downgraded, error=error)


def _o4_no_served_call(kit):
    """An O4 run whose downgraded agent was never served: the probe recorded landed=false."""
    b = kit.TraceBuilder(operator="O4")
    _downgraded_call(b, served="sim:realistic", downgraded=False)
    return b.probe("O4", landed=False)


def test_S3_run_error_from_run_error_event(kit) -> None:
    b = kit.injected().add("run_error", "harness", error_type="TimeoutError",
                           message="gateway timed out", attempt=2)
    ex = kit.score(b).excluded
    assert ex is not None and ex.code == "RUN_ERROR"
    assert "gateway timed out" in ex.reason and "attempt 2" in ex.reason


@pytest.mark.parametrize("status", ["error", "timeout"])
def test_S3_run_error_from_run_end_status(kit, status: str) -> None:
    ex = kit.score(kit.injected().end(status)).excluded
    assert ex is not None and ex.code == "RUN_ERROR" and status in ex.reason


@pytest.mark.parametrize("status", ["completed", "task_failed"])
def test_S3_completed_or_task_failed_runs_are_not_run_errors(kit, status: str) -> None:
    assert kit.score(kit.injected().end(status)).excluded is None


def test_S5_guardrail_retry_exhaustion_is_never_run_error(kit) -> None:
    b = kit.injected("crewai", "guardrail").add(
        "escalation", "guardrail", mechanism="crewai_guardrail_exhausted", message=EXHAUSTED
    ).add("run_error", "harness", error_type="Exception", message=EXHAUSTED
    ).end("task_failed")
    v = kit.score(b, "v0.1.3", passed=False)
    assert v.excluded is None and v.detected_hard


def _escalated_then_raised(kit, message: str = EXHAUSTED):
    """CrewAI's exhaustion recorded, then its exception raised out of the pipeline: the
    harness closes the attempt with run_error and run_end(status=error), as it writes
    any raised exception."""
    error = f"Exception: {message}"
    return kit.injected("crewai", "guardrail").add(
        "escalation", "guardrail", EXHAUSTED, mechanism="crewai_guardrail_exhausted",
        message=EXHAUSTED,
    ).add("run_error", "harness", error_type="Exception", message=error, attempt=1
    ).add("run_end", "harness", status="error", detail=error)


@pytest.mark.parametrize("version", ["v0.1.3", "v0.2.0", "v0.2.1"])
def test_S5_escalation_then_a_raised_exception_is_scored_as_the_escalation(
    kit, version: str
) -> None:
    """Issue item 10: the run_end(status=error) that closes the raised exception repeats
    the escalation too, so the run is the escalate act, not a RUN_ERROR."""
    v = kit.score(_escalated_then_raised(kit), version, passed=False)
    assert v.excluded is None and v.detected_hard
    assert [a.act for a in v.acts if a.act == "escalate"] == ["escalate"]


def test_S5_an_unrelated_error_after_an_escalation_is_still_a_run_error(kit) -> None:
    b = kit.injected("crewai", "guardrail").add(
        "escalation", "guardrail", EXHAUSTED, mechanism="crewai_guardrail_exhausted",
        message=EXHAUSTED,
    ).add("run_end", "harness", status="error", detail="ConnectionError: gateway went away")
    ex = kit.score(b, passed=False).excluded
    assert ex is not None and ex.code == "RUN_ERROR" and "gateway went away" in ex.reason


def test_S5_a_timeout_after_an_escalation_is_still_a_run_error(kit) -> None:
    b = kit.injected("crewai", "guardrail").add(
        "escalation", "guardrail", EXHAUSTED, mechanism="crewai_guardrail_exhausted",
        message=EXHAUSTED,
    ).add("run_end", "harness", status="timeout", detail=f"Timeout: {EXHAUSTED}")
    ex = kit.score(b, passed=False).excluded
    assert ex is not None and ex.code == "RUN_ERROR" and "timeout" in ex.reason


def test_S3_baseline_fail(kit) -> None:
    ex = kit.score(kit.injected(), baseline_passed=False).excluded
    assert ex is not None and ex.code == "BASELINE_FAIL" and "baseline" in ex.reason


def test_S3_unknown_baseline_excludes_nothing_but_is_recorded(kit) -> None:
    v = kit.score(kit.injected(), baseline_passed=None)
    assert v.excluded is None and not v.baseline_known


def test_S3_injection_unverified_without_probe(kit) -> None:
    b = kit.TraceBuilder().inject()
    ex = kit.score(b).excluded
    assert ex is not None and ex.code == "INJECTION_UNVERIFIED" and "no landing probe" in ex.reason


def test_S3_injection_unverified_when_probe_did_not_land(kit) -> None:
    b = kit.TraceBuilder().inject().probe(landed=False)
    ex = kit.score(b).excluded
    assert ex is not None and ex.code == "INJECTION_UNVERIFIED" and "landed=false" in ex.reason


def test_S10_7_2_O4_needs_a_call_served_by_the_downgraded_model(kit) -> None:
    b = kit.injected(operator="O4")
    ex = kit.score(b, "v0.2.0").excluded
    assert ex is not None and ex.code == "INJECTION_UNVERIFIED" and "O4" in ex.reason
    assert kit.score(_downgraded_call(kit.injected(operator="O4")), "v0.2.0").excluded is None


def test_S10_7_2_a_persona_name_is_not_a_downgrade(kit) -> None:
    """The embedded model answers every call as 'sim:realistic' while the framework asked for
    gpt-5.6-terra: a served name unlike the requested one is not the O4 plan's doing."""
    b = _downgraded_call(kit.injected(operator="O4"), served="sim:realistic",
                         downgraded=False)
    ex = kit.score(b, "v0.2.0").excluded
    assert ex is not None and ex.code == "INJECTION_UNVERIFIED"
    assert "1 call(s) recorded, 0 routed" in ex.reason


def test_S10_7_2_a_routed_call_served_by_the_requested_model_is_not_a_downgrade(kit) -> None:
    same = _downgraded_call(kit.injected(operator="O4"), served="gpt-5.6-terra")
    assert kit.score(same, "v0.2.0").excluded is not None
    snapshot = _downgraded_call(kit.injected(operator="O4"), served="gpt-5.6-terra-2026-07-01")
    assert kit.score(snapshot, "v0.2.0").excluded is not None
    live = _downgraded_call(kit.injected(operator="O4"), served="gpt-5.6-luna")
    assert kit.score(live, "v0.2.0").excluded is None


def test_S10_7_2_a_call_answered_with_an_error_is_not_served(kit) -> None:
    b = _downgraded_call(kit.injected(operator="O4"), error="upstream 500")
    assert kit.score(b, "v0.2.0").excluded is not None


@pytest.mark.parametrize("version", ["v0.1.1", "v0.1.2", "v0.1.3"])
def test_S10_7_2_I21_wave1_rules_verify_O4_unconditionally(kit, version: str) -> None:
    """Wave 1 recorded O4 as landed whatever was served: the probe's own landed=false
    (no downgraded call) does not exclude the cell under v0.1.x."""
    assert kit.score(_o4_no_served_call(kit), version).excluded is None


@pytest.mark.parametrize("version", ["v0.2.0", "v0.2.1"])
def test_S10_7_2_I21_the_correction_applies_from_v0_2_0(kit, version: str) -> None:
    ex = kit.score(_o4_no_served_call(kit), version).excluded
    assert ex is not None and ex.code == "INJECTION_UNVERIFIED"


def test_S10_7_2_I21_the_probe_flag_does_not_decide_O4(kit) -> None:
    """A probe that says landed but no served call: the rule version still decides."""
    b = _downgraded_call(kit.TraceBuilder(operator="O4"), served="sim:realistic",
                         downgraded=False).probe("O4", landed=True)
    assert kit.score(b, "v0.1.3").excluded is None
    assert kit.score(b, "v0.2.0").excluded is not None


def test_S10_7_correction_2_only_O4_needs_the_served_call(kit) -> None:
    assert kit.score(kit.injected(operator="O1"), "v0.2.1").excluded is None


def test_S3_2_exclusion_precedence_run_error_beats_baseline_fail(kit) -> None:
    ex = kit.score(kit.injected().end("error"), baseline_passed=False).excluded
    assert ex is not None and ex.code == "RUN_ERROR" and ex.also_qualified == ["BASELINE_FAIL"]


def test_S3_2_exclusion_precedence_run_error_beats_injection_unverified(kit) -> None:
    ex = kit.score(kit.TraceBuilder().inject().end("timeout")).excluded
    assert ex is not None and ex.code == "RUN_ERROR"
    assert ex.also_qualified == ["INJECTION_UNVERIFIED"]


def test_S3_2_exclusion_precedence_baseline_fail_beats_injection_unverified(kit) -> None:
    ex = kit.score(kit.TraceBuilder().inject().probe(landed=False), baseline_passed=False).excluded
    assert ex is not None and ex.code == "BASELINE_FAIL"
    assert ex.also_qualified == ["INJECTION_UNVERIFIED"]


def test_S3_2_exclusion_precedence_all_three_give_exactly_one_code(kit) -> None:
    b = kit.TraceBuilder().inject().add("run_error", "harness", error_type="E", message="m")
    ex = kit.score(b, baseline_passed=False).excluded
    assert ex is not None and ex.code == "RUN_ERROR"
    assert ex.also_qualified == ["BASELINE_FAIL", "INJECTION_UNVERIFIED"]


def test_S3_baseline_verdicts_passed_failed_run_error(kit) -> None:
    from pytest_sabot.scoring.score import score_baseline

    rules = kit.rules("v0.2.1")
    clean = kit.TraceBuilder(operator=None).end().build()
    assert score_baseline(clean, passed=True, rules=rules).status == "passed"
    failed = score_baseline(clean, passed=False, rules=rules)
    assert failed.status == "failed" and failed.reason
    crashed = kit.TraceBuilder(operator=None).end("error").build()
    assert score_baseline(crashed, passed=True, rules=rules).status == "RUN_ERROR"


def test_S3_score_cell_refuses_a_baseline_trace(kit) -> None:
    with pytest.raises(ValueError, match="score_baseline"):
        kit.score(kit.TraceBuilder(operator=None))
