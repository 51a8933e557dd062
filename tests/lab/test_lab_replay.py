"""Replay re-executes a recorded run's actions (no model, no agent logic) and reports
`verified` or `diverged` with the first difference, always with the original gate; a
failed run replays as failed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lab_helpers import agent, correct, create, run, scenario

from pytest_sabot.lab.agent import AgentContext
from pytest_sabot.lab.controllers import CONTROLLERS
from pytest_sabot.lab.engine import run_scenario
from pytest_sabot.lab.record import read_run
from pytest_sabot.lab.replay import replay_run


@pytest.fixture
def naive_run(tmp_path: Path) -> Path:
    run_scenario(scenario("lost-create-response"), CONTROLLERS["builtin:naive"], tmp_path)
    return tmp_path / "run.json"


def _tamper(path: Path, edit: Any) -> Path:
    data = json.loads(path.read_text())
    edit(data)
    out = path.with_name("tampered.json")
    out.write_text(json.dumps(data))
    return out


def test_replay_of_a_failed_run_is_verified_and_stays_failed(naive_run: Path) -> None:
    report = replay_run(read_run(naive_run))
    assert report.reproduction == "verified" and report.first_difference is None
    assert (report.original_gate, report.replayed_gate) == ("fail", "fail")
    assert report.actions == 6


@pytest.mark.parametrize("name", ["stale-ticket-read", "rate-limited-assignment",
                                  "urgent-needs-approval", "lost-create-no-idempotency"])
def test_replay_verifies_every_controller_on_shipped_scenarios(name: str) -> None:
    for controller in CONTROLLERS.values():
        report = replay_run(run(scenario(name), controller))
        assert report.reproduction == "verified", (name, controller.name,
                                                   report.first_difference)


def test_replay_needs_only_the_record_not_the_agent() -> None:
    record = run(scenario("lost-create-response", lambda d: d.update(faults=[])), correct)
    assert record.agent.name == "test:agent"
    assert replay_run(record).reproduction == "verified"


def test_replay_reproduces_how_execution_ended() -> None:
    def crashes(ctx: AgentContext) -> None:
        create(ctx, "a")
        raise KeyError("missing field")

    def hammers(ctx: AgentContext) -> None:
        while True:
            ctx.call_tool("get_customer", {"customer_id": ctx.task.customer_id})

    s = scenario("lost-create-response")
    for body, status in ((crashes, "agent_error"), (hammers, "budget_exhausted")):
        record = run_scenario(s, agent(body), None)
        assert record.execution.status == status
        report = replay_run(record)
        assert report.reproduction == "verified", report.first_difference


def test_a_tampered_observation_diverges_at_that_event(naive_run: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["streams"]["observations"][2]["observation"]["error"]["code"] = "rate_limited"

    report = replay_run(read_run(_tamper(naive_run, edit)))
    assert report.reproduction == "diverged"
    diff = report.first_difference
    assert diff is not None and "(observations o3)" in diff.where
    assert (diff.field, diff.recorded, diff.replayed) == (
        "observation.error.code", "rate_limited", "timeout")
    assert report.original_gate == "fail"


def test_a_tampered_request_diverges_at_its_first_consequence(naive_run: Path) -> None:
    def edit(data: dict[str, Any]) -> None:  # the retry now reuses the first key
        data["streams"]["requests"][3]["arguments"]["operation_key"] = "naive-create-1"

    report = replay_run(read_run(_tamper(naive_run, edit)))
    diff = report.first_difference
    assert report.reproduction == "diverged" and diff is not None
    assert "(deliveries d4)" in diff.where and diff.field == "arguments.operation_key"
    assert report.original_gate == "fail"
    # the later recorded actions name a ticket the replay never created: no repair either
    assert report.replayed_gate == "fail"


def test_a_tampered_gate_is_caught_and_the_replay_stays_failed(naive_run: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["gate"]["outcome"] = "pass"
        data["gate"]["exit_code"] = 0

    report = replay_run(read_run(_tamper(naive_run, edit)))
    assert report.reproduction == "diverged"
    assert report.first_difference is not None and report.first_difference.where == "gate"
    assert report.replayed_gate == "fail"


def test_a_tampered_scenario_is_caught_by_its_digest(naive_run: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["scenario"]["expect"]["tickets"] = 2

    report = replay_run(read_run(_tamper(naive_run, edit)))
    assert report.first_difference is not None
    assert report.first_difference.where == "scenario_digest"
