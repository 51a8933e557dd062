"""The agent-facing interface: an agent gets only the public task, its capabilities and
the tool catalog, reaches the world only through routed tool calls and virtual sleeps,
and the interface imports no agent framework."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from lab_helpers import agent, run, scenario

from pytest_sabot.lab.agent import AgentContext, AgentResult, RunClosed
from pytest_sabot.lab.engine import agent_view, run_scenario
from pytest_sabot.lab.record import ProviderUsage


def test_the_view_holds_the_public_task_capabilities_and_catalog_only() -> None:
    s = scenario("stale-ticket-read")
    view = agent_view(s)
    text = view.model_dump_json()
    assert view.task.request_key == "REQ-8840" and len(view.catalog) == 6
    private = [s.name, "lagging-replica", "stale_read", '"faults"', '"expect"', '"seed"',
               "existing_tickets", "revisions", "stale-ticket-read.yaml", "delay_ms",
               "background"]
    assert [word for word in private if word in text] == []
    world_ids = {"C-311", "A-12"}  # only the ids the task itself names
    assert set(re.findall(r"\b[CAT]-\d+\b", text)) <= world_ids


def test_capabilities_limit_the_catalog_and_a_call_outside_them_is_forbidden() -> None:
    s = scenario("lost-create-response", lambda d: d["task"].update(
        capabilities=["get_customer", "find_tickets", "create_ticket"]))
    shown: list[Any] = []

    def body(ctx: AgentContext) -> None:
        assert [c.name for c in ctx.catalog] == list(ctx.capabilities)
        shown.append(ctx.call_tool("notify_customer", {"customer_id": "C-104",
                                                       "ticket_id": "T-1", "message": "x"}))
        shown.append(ctx.call_tool("delete_everything", {}))
        shown.append(ctx.call_tool("get_customer", {"customer_id": object()}))

    record = run(s, body)
    assert [o.error.code for o in shown] == ["forbidden", "unknown_tool", "invalid_arguments"]
    assert record.streams.deliveries == [] and record.streams.effects == []
    assert [r.tool for r in record.streams.requests] == ["notify_customer",
                                                          "delete_everything", "get_customer"]


def test_sleep_advances_virtual_time_only() -> None:
    def body(ctx: AgentContext) -> None:
        ctx.sleep(3_600_000 - 1)

    s = scenario("lost-create-response", lambda d: d["limits"].update(deadline_ms=3_600_000))
    record = run(s, body)
    assert record.measurement.virtual_ms == 3_599_999
    assert record.timings.agent_real_ms < 60_000  # a virtual hour is not a real one
    assert [w.ms for w in record.waits] == [3_599_999]

    def bad(ctx: AgentContext) -> None:
        ctx.sleep(-5)

    assert run(s, bad).execution.status == "agent_error"


def test_a_call_after_the_run_ended_cannot_reach_the_world() -> None:
    kept: list[AgentContext] = []

    def body(ctx: AgentContext) -> None:
        kept.append(ctx)

    record = run(scenario("lost-create-response"), body)
    with pytest.raises(RunClosed):
        kept[0].call_tool("get_customer", {"customer_id": "C-104"})
    assert record.streams.requests == []


def test_an_async_agent_is_awaited() -> None:
    async def body(ctx: AgentContext) -> AgentResult:
        obs = ctx.call_tool("get_customer", {"customer_id": ctx.task.customer_id})
        return AgentResult(f"customer ok: {obs.ok}")

    record = run_scenario(scenario("lost-create-response"), agent(body), None)
    assert record.execution.output == "customer ok: True"


def test_TA11_an_async_agent_may_await_its_calls_and_waits_in_process() -> None:
    async def body(ctx: AgentContext) -> AgentResult:
        obs = await ctx.call_tool("get_customer", {"customer_id": ctx.task["customer_id"]})
        await ctx.sleep(40)
        again = ctx.call_tool("get_customer", {"customer_id": ctx.task.customer_id})
        return AgentResult(f"customer ok: {obs.ok} {again == obs}")

    record = run_scenario(scenario("lost-create-response"), agent(body), None)
    assert record.execution.output == "customer ok: True True"
    assert [w.ms for w in record.waits] == [40]
    assert [r.tool for r in record.streams.requests] == ["get_customer", "get_customer"]


def test_calls_from_several_threads_are_recorded_once_each_in_one_order() -> None:
    def body(ctx: AgentContext) -> None:
        def reader() -> None:
            for _ in range(5):
                ctx.call_tool("get_customer", {"customer_id": ctx.task.customer_id})

        threads = [threading.Thread(target=reader) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    record = run(scenario("lost-create-response"), body)
    s = record.streams
    seqs = sorted([e.seq for e in s.requests] + [e.seq for e in s.deliveries]
                  + [e.seq for e in s.observations])
    assert len(s.requests) == 20 and seqs == list(range(60))


def test_provider_usage_is_unknown_unless_observed() -> None:
    record = run(scenario("lost-create-response"), lambda ctx: None)
    usage = record.measurement.provider_usage
    assert (usage.source, usage.model_calls, usage.cost_usd) == ("unobserved", "unknown",
                                                                  "unknown")
    seen = ProviderUsage(source="gateway", model_calls=3, prompt_tokens=900,
                         completion_tokens=120, cost_usd=0.0)
    observed = run_scenario(scenario("lost-create-response"), agent(lambda ctx: None), None,
                            usage=lambda: seen)
    assert observed.measurement.provider_usage == seen


@pytest.mark.slow
def test_the_lab_imports_no_agent_framework(tmp_path: Path) -> None:
    probe = (
        "import sys, pytest_sabot.lab, pytest_sabot.lab.agent, pytest_sabot.commands.lab\n"
        "heavy = {'langgraph', 'crewai', 'autogen_agentchat', 'autogen_core', 'autogen_ext',\n"
        "         'langchain_core', 'langchain_openai', 'openai', 'httpx'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.strip() == "[]"
