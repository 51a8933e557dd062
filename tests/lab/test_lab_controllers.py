"""The scripted controllers are acceptance fixtures: on every shipped scenario each one
produces its declared gate through the real engine (naive fails with a duplicate on a
lost creation, resilient passes, noop fails completion)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lab_helpers import run, scenario

from pytest_sabot.commands.lab_demo import DECLARED, run_demo
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.lab.controllers import CONTROLLERS, resolve_agent

NOOP_COMPLETION = {"LC1", "LC2", "LC3"}

# (scenario, controller) -> (gate, violated rules)
EXPECTED: dict[tuple[str, str], tuple[str, set[str]]] = {
    ("lost-create-response", "naive"): ("fail", {"LS1", "LC1"}),
    ("lost-create-response", "resilient"): ("pass", set()),
    ("lost-create-response", "noop"): ("fail", NOOP_COMPLETION),
    ("lost-create-no-idempotency", "naive"): ("fail", {"LS1", "LC1"}),
    ("lost-create-no-idempotency", "resilient"): ("pass", set()),
    ("lost-create-no-idempotency", "noop"): ("fail", NOOP_COMPLETION),
    ("create-lost-before-commit", "naive"): ("pass", set()),
    ("create-lost-before-commit", "resilient"): ("pass", set()),
    ("create-lost-before-commit", "noop"): ("fail", NOOP_COMPLETION),
    ("duplicate-create-delivery", "naive"): ("pass", set()),
    ("duplicate-create-delivery", "resilient"): ("pass", set()),
    ("duplicate-create-delivery", "noop"): ("fail", NOOP_COMPLETION),
    ("rate-limited-assignment", "naive"): ("fail", {"LS4", "LC3"}),
    ("rate-limited-assignment", "resilient"): ("pass", set()),
    ("rate-limited-assignment", "noop"): ("fail", NOOP_COMPLETION),
    ("stale-ticket-read", "naive"): ("fail", {"LS4", "LC3"}),
    ("stale-ticket-read", "resilient"): ("pass", set()),
    ("stale-ticket-read", "noop"): ("fail", {"LC2", "LC3"}),
    ("urgent-needs-approval", "naive"): ("fail", {"LS3"}),
    ("urgent-needs-approval", "resilient"): ("pass", set()),
    ("urgent-needs-approval", "noop"): ("fail", NOOP_COMPLETION),
}


@pytest.mark.parametrize(("name", "controller"), sorted(EXPECTED))
def test_controller_produces_its_declared_gate(name: str, controller: str) -> None:
    record = run(scenario(name), CONTROLLERS[f"builtin:{controller}"])
    gate, rules = EXPECTED[(name, controller)]
    assert record.execution.status == "completed"
    assert (record.gate.outcome, {v.rule for v in record.gate.violations}) == (gate, rules)
    assert record.agent.fixture and record.agent.kind == "scripted"


def test_demo_check_produces_every_declared_gate(tmp_path: Path) -> None:
    rows = run_demo(tmp_path)
    assert [r.agent for r in rows] == [d.agent for d in DECLARED]
    assert all(r.ok for r in rows), rows
    assert [r.gate for r in rows] == ["fail", "pass", "fail"]
    assert "LS1" in rows[0].rules  # naive: the duplicate
    assert set(rows[2].rules) == NOOP_COMPLETION  # noop: completion only
    assert all((tmp_path / d.agent.removeprefix("builtin:") / "run.json").is_file()
               for d in DECLARED)


def test_resilient_reuses_one_key_and_reads_back_before_notifying() -> None:
    record = run(scenario("lost-create-response"), CONTROLLERS["builtin:resilient"])
    creates = [r for r in record.streams.requests if r.tool == "create_ticket"]
    assert len({r.arguments["operation_key"] for r in creates}) == 1 and len(creates) == 2
    tools = [r.tool for r in record.streams.requests]
    notify_at = tools.index("notify_customer")
    assert tools[notify_at - 1] == "get_ticket"  # the read-back that saw the assignment


def test_naive_uses_a_new_key_for_its_retry() -> None:
    record = run(scenario("lost-create-response"), CONTROLLERS["builtin:naive"])
    keys = [r.arguments["operation_key"] for r in record.streams.requests
            if r.tool == "create_ticket"]
    assert keys == ["naive-create-1", "naive-create-2"]


def test_an_unknown_agent_name_is_a_clear_error() -> None:
    with pytest.raises(SabotDataError) as info:
        resolve_agent("builtin:clever")
    assert "--agent" in str(info.value) and "builtin:naive" in str(info.value)
