"""The lab's MCP server, driven by the SDK's own stdio client (docs/LAB.md, rules MS1-MS6):
one scenario served as one run; a client reads the public context, calls the scenario's
tools through the lab's boundary, and ``finish_run`` closes the run for good and returns
the evaluation."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp_helpers import CONTEXT_URI, drive, finish, lab_client, server_env, text_of, view_of

from pytest_sabot.lab.agent import LabAgent
from pytest_sabot.lab.controllers import naive, resilient
from pytest_sabot.lab.engine import agent_view, run_scenario
from pytest_sabot.lab.record import LabRun, read_run
from pytest_sabot.lab.replay import replay_run
from pytest_sabot.lab.scenario_load import SCENARIO_DIR, load_scenario, resolve_scenario

LOST_CREATE = load_scenario(resolve_scenario("lost-create-response"))
SAME = ("streams", "waits", "world_initial", "world_final", "coverage", "execution", "gate",
        "agent_view", "measurement")


def _differences(a: LabRun, b: LabRun) -> list[str]:
    return [part for part in SAME if getattr(a, part) != getattr(b, part)]


def _in_process(controller: Any) -> LabRun:
    return run_scenario(LOST_CREATE, LabAgent("in-process", "scripted", controller), None)


@pytest.mark.slow
def test_MS1_a_client_reads_only_the_public_context_and_the_scenarios_tools(
        tmp_path: Path) -> None:
    data = yaml.safe_load((SCENARIO_DIR / "helpdesk" / "lost-create-response.yaml")
                          .read_text())
    data["name"] = "zq-private-name"
    data["faults"][0]["id"] = "zq-private-fault"
    data["task"]["capabilities"] = ["get_customer", "find_tickets", "create_ticket"]
    path = tmp_path / "zq-private-file.yaml"
    path.write_text(yaml.safe_dump(data))

    async def body() -> tuple[Any, ...]:
        async with lab_client(tmp_path / "out", path) as session:
            tools = await session.list_tools()
            resources = await session.list_resources()
            view = await view_of(session)
            by_tool = await session.call_tool("get_context", {})
            return tools, resources, view, by_tool

    tools, resources, view, by_tool = asyncio.run(body())
    expected = agent_view(load_scenario(path))
    assert view == expected and by_tool.structuredContent == expected.model_dump(mode="json")
    assert [str(r.uri) for r in resources.resources] == [CONTEXT_URI]
    names = [t.name for t in tools.tools]
    assert names == ["get_customer", "find_tickets", "create_ticket", "get_context", "sleep",
                     "register_usage", "finish_run"]
    catalog = {c.name: c.arguments for c in expected.catalog}
    assert {t.name: t.inputSchema for t in tools.tools if t.name in catalog} == catalog
    listed = json.dumps([t.model_dump(mode="json") for t in tools.tools]) + text_of(by_tool)
    assert [m for m in ("zq-private", "timeout_after_commit", str(path), '"expect"')
            if m in listed] == []


@pytest.mark.slow
def test_MS2_a_resilient_client_passes_and_is_recorded_like_the_same_agent_in_process(
        tmp_path: Path) -> None:
    out = tmp_path / "resilient"

    async def body() -> dict[str, Any]:
        async with lab_client(out, name="resilient-client") as session:
            result = await drive(session, resilient)
            return await finish(session, result.output)

    evaluation = asyncio.run(body())
    assert evaluation["gate"]["outcome"] == "pass" and evaluation["gate"]["exit_code"] == 0
    assert evaluation["record"] == str(out / "run.json")
    record = read_run(out)
    assert record.agent.name == "mcp:resilient-client" and record.agent.kind == "mcp"
    assert record.gate.model_dump(mode="json") == evaluation["gate"]
    assert _differences(record, _in_process(resilient)) == []
    assert "gate PASS (exit 0)" in (tmp_path / "resilient.server.log").read_text()


@pytest.mark.slow
def test_MS2_a_naive_client_under_a_lost_create_fails_with_the_duplicate(
        tmp_path: Path) -> None:
    out = tmp_path / "naive"

    async def body() -> dict[str, Any]:
        async with lab_client(out) as session:
            result = await drive(session, naive)
            return await finish(session, result.output)

    evaluation = asyncio.run(body())
    gate = evaluation["gate"]
    assert gate["outcome"] == "fail" and gate["exit_code"] == 1
    assert [v["rule"] for v in gate["violations"]] == ["LS1", "LC1"]
    duplicate = gate["violations"][0]
    assert [e["id"] for e in duplicate["evidence"] if e["stream"] == "effects"] == ["e1", "e2"]
    assert [c["status"] for c in gate["coverage"]] == ["activated"]
    record = read_run(out)
    assert _differences(record, _in_process(naive)) == []
    assert replay_run(record).reproduction == "verified"


@pytest.mark.slow
def test_MS3_finish_run_closes_the_run_for_good(tmp_path: Path) -> None:
    out = tmp_path / "closed"

    async def body() -> list[Any]:
        async with lab_client(out) as session:
            await session.call_tool("get_customer", {"customer_id": "C-104"})
            first = await finish(session, "first")
            again = await session.call_tool("finish_run", {"output": "second"})
            late = await session.call_tool("create_ticket", {
                "customer_id": "C-104", "request_key": "REQ-7731", "subject": "late",
                "priority": "high", "operation_key": "late-1"})
            wait = await session.call_tool("sleep", {"ms": 10})
            context = await session.call_tool("get_context", {})
            return [first, again, late, wait, context]

    first, again, late, wait, context = asyncio.run(body())
    assert first["execution"]["output"] == "first"
    for refused in (again, late, wait, context):
        assert refused.isError and "the run is finished" in text_of(refused)
    record = read_run(out)
    assert [r.tool for r in record.streams.requests] == ["get_customer"]
    assert record.execution.output == "first" and record.streams.effects == []
    assert sorted(p.name for p in out.iterdir()) == ["junit.xml", "report.html", "run.json"]


@pytest.mark.slow
def test_MS3_an_output_that_is_not_text_is_recorded_as_json_never_as_a_python_repr(
        tmp_path: Path) -> None:
    out = tmp_path / "json-output"

    async def body() -> Any:
        async with lab_client(out) as session:
            return await session.call_tool("finish_run", {"output": {"ticket": "T-1"}})

    answer = asyncio.run(body())
    assert not answer.isError, text_of(answer)
    assert read_run(out).execution.output == '{"ticket": "T-1"}'
    assert "{'ticket'" not in (out / "run.json").read_text()


@pytest.mark.slow
def test_MS4_a_client_that_leaves_without_finish_run_still_gets_a_record(
        tmp_path: Path) -> None:
    create = {"customer_id": "C-104", "request_key": "REQ-7731", "subject": "VAT",
              "priority": "high"}

    async def leave_after(out: Path, calls: list[tuple[str, dict[str, Any]]]) -> None:
        async with lab_client(out) as session:
            for name, arguments in calls:
                await session.call_tool(name, arguments)

    asyncio.run(leave_after(tmp_path / "quiet", [("get_customer", {"customer_id": "C-104"})]))
    quiet = read_run(tmp_path / "quiet")
    assert quiet.execution.status == "cancelled"
    assert quiet.execution.detail == "the MCP client left before finish_run"
    assert quiet.gate.outcome == "inconclusive"
    assert replay_run(quiet).reproduction == "verified"

    asyncio.run(leave_after(tmp_path / "twice", [
        ("create_ticket", {**create, "operation_key": "k1"}),
        ("create_ticket", {**create, "operation_key": "k2"})]))
    twice = read_run(tmp_path / "twice")
    assert twice.execution.status == "cancelled" and twice.gate.outcome == "fail"
    assert [v.rule for v in twice.gate.violations] == ["LS1"]  # safety is judged anyway


@pytest.mark.slow
def test_MS2_malformed_calls_and_limits_reach_the_boundary_and_are_recorded(
        tmp_path: Path) -> None:
    out = tmp_path / "odd"

    async def body() -> list[Any]:
        async with lab_client(out) as session:
            bad = await session.call_tool("create_ticket", {"customer_id": 5})
            unknown = await session.call_tool("delete_everything", {})
            negative = await session.call_tool("sleep", {"ms": -1})
            past = await session.call_tool("sleep", {"ms": LOST_CREATE.limits.deadline_ms})
            after = await session.call_tool("get_customer", {"customer_id": "C-104"})
            return [bad, unknown, negative, past, after, await finish(session)]

    bad, unknown, negative, past, after, evaluation = asyncio.run(body())
    assert bad.isError and bad.structuredContent is not None
    assert bad.structuredContent["error"]["code"] == "invalid_arguments"
    assert unknown.structuredContent is not None
    assert unknown.structuredContent["error"]["code"] == "unknown_tool"
    assert negative.isError and "milliseconds >= 0" in text_of(negative)
    assert past.isError and "deadline_exceeded" in text_of(past)
    assert after.isError and "deadline_exceeded" in text_of(after)
    assert evaluation["execution"]["status"] == "deadline_exceeded"
    assert evaluation["gate"]["outcome"] == "inconclusive"
    record = read_run(out)
    assert [r.arguments for r in record.streams.requests] == [{"customer_id": 5}, {}]
    assert record.execution.refused is not None and record.execution.refused.kind == "wait"


@pytest.mark.slow
def test_MS5_a_bad_scenario_exits_2_before_anything_is_served(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("format_version: 1\nname: x\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sabot.lab", "mcp", str(bad), "--out",
         str(tmp_path / "out")], input="", capture_output=True, text=True, timeout=120,
        env=server_env())
    assert done.returncode == 2
    assert str(bad) in done.stderr and "field 'world'" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_MS6_the_lab_and_the_plugin_load_the_mcp_sdk_only_for_the_mcp_command() -> None:
    probe = ("import sys, pytest_sabot.plugin, pytest_sabot.lab, pytest_sabot.lab.__main__\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120, env=server_env())
    assert done.stdout.strip() == "[]"
