"""Gate precedence (LG1..LG4) and exit codes: error > fail > inconclusive > pass, where an
observed violation is never hidden behind missing coverage or an unfinished run, and a
required fault that never activated can never pass."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from lab_helpers import agent, assign, correct, create, notify, run, scenario

from pytest_sabot.core.exit_codes import GATE_EXIT
from pytest_sabot.lab.agent import AgentContext
from pytest_sabot.lab.controllers import CONTROLLERS
from pytest_sabot.lab.engine import run_scenario
from pytest_sabot.lab.gate import decide, evaluate
from pytest_sabot.lab.record import Execution, read_run


def _calm(d: dict[str, Any]) -> None:
    d["faults"] = []


@pytest.mark.parametrize(
    ("harness_failed", "completed", "violated", "missing", "outcome"),
    [
        (True, True, True, True, "error"),
        (True, True, False, False, "error"),
        (False, False, True, True, "fail"),
        (False, True, True, False, "fail"),
        (False, False, False, False, "inconclusive"),
        (False, True, False, True, "inconclusive"),
        (False, True, False, False, "pass"),
    ],
)
def test_LG_precedence_table(harness_failed: bool, completed: bool, violated: bool,
                             missing: bool, outcome: str) -> None:
    naive = run(scenario("lost-create-response"), CONTROLLERS["builtin:naive"])
    violations = naive.gate.violations if violated else []
    checks = naive.gate.coverage if missing else []
    assert decide(harness_failed=harness_failed, completed=completed, violations=violations,
                  missing=checks) == outcome


def test_LG_exit_codes() -> None:
    assert GATE_EXIT == {"pass": 0, "fail": 1, "error": 2, "inconclusive": 3}


def test_LG1_a_harness_failure_is_an_error_even_over_an_observed_violation() -> None:
    record = run(scenario("lost-create-response"), CONTROLLERS["builtin:naive"])
    assert record.gate.outcome == "fail"
    broken = record.model_copy(update={"execution": Execution(
        status="harness_error", detail="RuntimeError: store lost")})
    gate = evaluate(broken)
    assert (gate.outcome, gate.exit_code) == ("error", 2)
    assert gate.reasons[0] == "harness error: RuntimeError: store lost"


def test_LG2_an_observed_violation_beats_missing_coverage() -> None:
    record = run(scenario("lost-create-response"), CONTROLLERS["builtin:noop"])
    assert record.gate.coverage[0].status == "planned"
    assert record.gate.outcome == "fail"


def test_LG2_a_safety_violation_beats_an_unfinished_run() -> None:
    def body(ctx: AgentContext) -> None:
        create(ctx, "a")
        create(ctx, "b")
        raise RuntimeError("agent crashed")

    record = run(scenario("lost-create-response", _calm), body)
    assert record.execution.status == "agent_error"
    assert record.execution.detail == "RuntimeError: agent crashed"
    assert record.gate.outcome == "fail"
    assert [v.rule for v in record.gate.violations] == ["LS1"]  # LC1 not judged
    assert not record.gate.completion_judged


def test_LG3_an_unfinished_run_without_violations_is_inconclusive() -> None:
    def body(ctx: AgentContext) -> None:
        raise RuntimeError("gave up at once")

    record = run(scenario("lost-create-response", _calm), body)
    gate = record.gate
    assert (gate.outcome, gate.exit_code) == ("inconclusive", 3)
    assert gate.violations == [] and not gate.completion_judged
    assert "completion rules not judged" in gate.reasons[0]


def test_LG3_budget_exhaustion_is_inconclusive_even_when_the_agent_swallows_it() -> None:
    def body(ctx: AgentContext) -> None:
        for _ in range(100):
            with contextlib.suppress(Exception):  # the agent swallows the limit
                ctx.call_tool("get_customer", {"customer_id": ctx.task.customer_id})

    s = scenario("lost-create-response", _calm)
    record = run(s, body)
    assert record.execution.status == "budget_exhausted"
    assert len(record.streams.requests) == s.limits.max_tool_calls
    assert record.execution.refused is not None and record.execution.refused.tool == \
        "get_customer"
    assert record.gate.outcome == "inconclusive"


def test_LG3_the_virtual_deadline_stops_the_run_as_inconclusive() -> None:
    def body(ctx: AgentContext) -> None:
        while True:
            ctx.sleep(60_000)

    s = scenario("lost-create-response", _calm)
    record = run(s, body)
    assert record.execution.status == "deadline_exceeded"
    assert record.measurement.virtual_ms == s.limits.deadline_ms
    assert record.gate.outcome == "inconclusive"


def test_LG3_a_required_fault_that_never_activated_makes_a_clean_run_inconclusive() -> None:
    late = scenario("lost-create-response", lambda d: d["faults"][0].update(call=2))
    record = run(late, correct)
    assert record.gate.violations == []
    assert record.gate.outcome == "inconclusive"
    assert "required fault 'lost-create'" in record.gate.reasons[0]
    optional = scenario("lost-create-response",
                        lambda d: d["faults"][0].update(call=2, required=False))
    assert run(optional, correct).gate.outcome == "pass"


def test_LG3_activated_is_not_enough_the_probe_must_see_it_land() -> None:
    record = run(scenario("lost-create-response"), CONTROLLERS["builtin:resilient"])
    assert record.gate.outcome == "pass"
    keep = [o for o in record.streams.observations if o.request_id != "r3"]
    tampered = record.model_copy(update={"streams": record.streams.model_copy(
        update={"observations": keep})})
    gate = evaluate(tampered)
    assert gate.outcome == "inconclusive"
    assert not gate.coverage[0].landed


def test_LG4_pass_needs_assertions_execution_and_coverage() -> None:
    def keyed(ctx: AgentContext) -> None:
        lost = ctx.call_tool("create_ticket", {**_args(ctx), "operation_key": "k"})
        assert lost.error is not None and lost.error.code == "timeout"  # O8 fired
        ticket = create(ctx, "k")  # same key: answered from the operation record
        assign(ctx, ticket)
        notify(ctx, ticket)

    record = run(scenario("lost-create-response"), keyed)
    assert record.execution.status == "completed"
    assert (record.gate.outcome, record.gate.exit_code) == ("pass", 0)
    assert [(c.status, c.landed) for c in record.gate.coverage] == [("activated", True)]


def _args(ctx: AgentContext) -> dict[str, Any]:
    t = ctx.task
    return {"customer_id": t.customer_id, "request_key": t.request_key,
            "subject": t.subject, "priority": t.priority}


def test_a_cancelled_run_is_written_then_the_interrupt_is_raised(tmp_path: Path) -> None:
    def body(ctx: AgentContext) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_scenario(scenario("lost-create-response"), agent(body), tmp_path)
    record = read_run(tmp_path)
    assert record.execution.status == "cancelled"
    assert record.gate.outcome == "inconclusive"


def test_evaluate_offline_reproduces_the_recorded_gate(tmp_path: Path) -> None:
    for name, controller in CONTROLLERS.items():
        run_scenario(scenario("stale-ticket-read"), controller, tmp_path / name)
        record = read_run(tmp_path / name / "run.json")
        assert evaluate(record) == record.gate
