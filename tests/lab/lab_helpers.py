"""Helpers for the lab tests: shipped scenarios, variants, and small test agents.

Test agents are ordinary agents (callables over an AgentContext), driven through the
real engine; nothing of the lab is replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from pytest_sabot.lab.agent import AgentContext, LabAgent
from pytest_sabot.lab.engine import run_scenario
from pytest_sabot.lab.record import LabRun
from pytest_sabot.lab.scenario import Scenario
from pytest_sabot.lab.scenario_load import SCENARIO_DIR, parse_scenario

AgentBody = Callable[[AgentContext], Any]


def raw(name: str) -> dict[str, Any]:
    """The parsed YAML of a shipped scenario (a fresh copy to edit)."""
    data = yaml.safe_load((SCENARIO_DIR / "helpdesk" / f"{name}.yaml").read_text())
    assert isinstance(data, dict)
    return data


def scenario(name: str, edit: Callable[[dict[str, Any]], None] | None = None) -> Scenario:
    """A shipped scenario, optionally edited before validation."""
    data = raw(name)
    if edit is not None:
        edit(data)
    return parse_scenario(data, f"{name} (test variant)")


def agent(body: AgentBody, name: str = "test:agent") -> LabAgent:
    return LabAgent(name, "python", body)


def run(s: Scenario, body: AgentBody | LabAgent) -> LabRun:
    return run_scenario(s, body if isinstance(body, LabAgent) else agent(body), None)


def create_args(ctx: AgentContext, key: str | None = None) -> dict[str, Any]:
    t = ctx.task
    args: dict[str, Any] = {"customer_id": t.customer_id, "request_key": t.request_key,
                            "subject": t.subject, "priority": t.priority}
    if key is not None:
        args["operation_key"] = key
    return args


def ticket_of(obs: Any) -> dict[str, Any]:
    assert obs.ok, obs
    ticket: dict[str, Any] = obs.result["ticket"]
    return ticket


def create(ctx: AgentContext, key: str | None = None, **changes: Any) -> dict[str, Any]:
    return ticket_of(ctx.call_tool("create_ticket", {**create_args(ctx, key), **changes}))


def read_ticket(ctx: AgentContext, ticket_id: str) -> dict[str, Any]:
    return ticket_of(ctx.call_tool("get_ticket", {"ticket_id": ticket_id}))


def assign(ctx: AgentContext, ticket: dict[str, Any], assignee: str | None = None) -> (
        dict[str, Any]):
    current = read_ticket(ctx, ticket["ticket_id"])
    return ticket_of(ctx.call_tool("assign_ticket", {
        "ticket_id": ticket["ticket_id"], "assignee_id": assignee or ctx.task.assignee_id,
        "expected_version": current["version"]}))


def notify(ctx: AgentContext, ticket: dict[str, Any], customer: str | None = None) -> None:
    obs = ctx.call_tool("notify_customer", {
        "customer_id": customer or ctx.task.customer_id, "ticket_id": ticket["ticket_id"],
        "message": ctx.task.message})
    assert obs.ok, obs


def correct(ctx: AgentContext) -> None:
    """The task done right, with no faults in the way."""
    ticket = create(ctx)
    assign(ctx, ticket)
    notify(ctx, ticket)
