"""``sabot mcp CELL_ID`` (SPEC.md I83): one Sabot cell served over MCP stdio, driven by the
official MCP SDK's own stdio client. The client is the pipeline: it reads the public
context, calls the models it names and the cell's tools, hands its draft to its reviewer,
reports its own check and finishes; the finish returns the cell's evaluation."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, Implementation, TextContent
from openai import AsyncOpenAI

ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def cell_client(cell: str, out: Path, *extra: str) -> AsyncIterator[ClientSession]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "import sys; from pytest_sabot.commands.cli import main; "
              "sys.exit(main(sys.argv[1:]))", "mcp", cell, "--out", str(out),
              "--sabot-model=sim:vigilant", *extra],
        env={**os.environ, "PYTHONPATH": path}, cwd=str(ROOT))
    out.mkdir(parents=True, exist_ok=True)
    with (out / f"{cell}.server.log").open("w") as errlog:
        async with (stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write, client_info=Implementation(
                        name="sabot-test", version="1")) as session):
            await session.initialize()
            yield session


def _text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def _messages(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "system", "content": answer["system"]},
            {"role": "user", "content": answer["user"]}]


async def _pipeline(session: ClientSession) -> dict[str, Any]:
    """A client-side pipeline: worker with tools, reviewer, the reviewer's reply reported."""
    read = await session.read_resource("sabot://cell/context")  # type: ignore[arg-type]
    content = read.contents[0]
    assert hasattr(content, "text")
    context = json.loads(content.text)
    listed = {t.name for t in (await session.list_tools()).tools}
    assert {t["name"] for t in context["tools"]} <= listed
    endpoint = {m["agent"]: m for m in context["models"]}
    worker = AsyncOpenAI(base_url=endpoint["worker"]["base_url"],
                         api_key=endpoint["worker"]["api_key"], max_retries=0)
    model = endpoint["worker"]["model"]
    tools = [{"type": "function", "function": {"name": t["name"],
              "description": t["description"], "parameters": t["parameters"]}}
             for t in context["tools"]]
    messages = _messages(context["view"]["task"])
    for _ in range(context["view"]["capabilities"]["max_tool_model_calls"]):
        reply = await worker.chat.completions.create(model=model, messages=messages,
                                                     tools=tools)  # type: ignore[arg-type]
        message = reply.choices[0].message
        if not message.tool_calls:
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            seen = await session.call_tool(call.function.name,  # type: ignore[union-attr]
                                           json.loads(call.function.arguments or "{}"))  # type: ignore[union-attr]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": _text(seen)})
    draft = message.content or ""
    delivered = _text(await session.call_tool(
        "sabot_handoff", {"sender": "worker", "receiver": "reviewer", "text": draft}))
    prompt = (await session.call_tool(
        "sabot_reviewer_prompt", {"delivered": delivered, "round": 0})).structuredContent
    assert prompt is not None
    reviewer = AsyncOpenAI(base_url=endpoint["reviewer"]["base_url"],
                           api_key=endpoint["reviewer"]["api_key"], max_retries=0)
    review = (await reviewer.chat.completions.create(
        model=model, messages=_messages(prompt))).choices[0].message.content or ""  # type: ignore[arg-type]
    reported = await session.call_tool(
        "sabot_report", {"kind": "review", "component": "reviewer", "text": review})
    assert not reported.isError, _text(reported)
    await worker.close()
    await reviewer.close()
    finished = await session.call_tool("sabot_finish", {"output": delivered})
    assert not finished.isError, _text(finished)
    body: dict[str, Any] = json.loads(_text(finished))
    assert body == finished.structuredContent
    late = await session.call_tool("sabot_handoff", {"sender": "worker",
                                                     "receiver": "reviewer", "text": "again"})
    assert late.isError and "finished" in _text(late)
    return {"context": context, "evaluation": body}


def _events(out: Path, cell: str) -> list[dict[str, Any]]:
    text = (out / "cells" / cell / "events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.slow
def test_I83_an_mcp_client_completes_a_baseline_and_a_fault_cell(tmp_path: Path) -> None:
    out = tmp_path / "out"

    async def both() -> tuple[dict[str, Any], dict[str, Any]]:
        async with cell_client("baseline-T1-s11", out) as session:
            base = await _pipeline(session)
        async with cell_client("mcp_client-default-O3-T1-s11", out) as session:
            fault = await _pipeline(session)
        return base, fault

    base, fault = anyio.run(both)
    assert base["evaluation"]["cell_id"] == "mcp_client-default-baseline-T1-s11"
    assert base["evaluation"]["verdict"]["status"] == "passed", base["evaluation"]
    evaluation = fault["evaluation"]
    assert evaluation["baseline"] == "passed"  # scored beside the baseline recorded first
    verdict = evaluation["verdict"]
    assert verdict["excluded"] is None, verdict
    assert verdict["detection"] == "DETECTED_HARD", verdict
    # The public context only: nothing of the operator, the seed or the private spec.
    # The run's keys are random tokens: one may spell "O3" by chance, so they are left out.
    context = fault["context"]
    keyless = [{k: v for k, v in m.items() if k != "api_key"} for m in context["models"]]
    text = json.dumps({**context, "models": keyless})
    for private in ("O3", "operator", "seed", "pass_criteria", "ground_truth", "anchors"):
        assert private not in text, private
    kinds = [e["kind"] for e in _events(out, "mcp_client-default-O3-T1-s11")]
    assert {"model_call", "tool_call", "message", "injection", "review", "artifact"} <= set(kinds)
    assert kinds[-1] == "run_end"


@pytest.mark.slow
def test_I83_a_client_that_leaves_before_finishing_is_a_recorded_run_error(
        tmp_path: Path) -> None:
    out = tmp_path / "out"

    async def leave() -> None:
        async with cell_client("baseline-T1-s11", out) as session:
            await session.call_tool("sabot_context", {})

    anyio.run(leave)
    events = _events(out, "mcp_client-default-baseline-T1-s11")
    error = next(e for e in events if e["kind"] == "run_error")
    assert error["data"]["error_type"] == "ConnectionAbortedError"
    assert "left before sabot_finish" in error["data"]["message"]
    assert "baseline-T1-s11" in (out / "baseline-T1-s11.server.log").read_text()


def test_I83_a_cell_id_that_names_no_cell_is_refused_before_anything_is_served(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_sabot.commands.cli import main

    assert main(["mcp", "O9-T1-s11", "--out", str(tmp_path / "out")]) == 2
    assert main(["mcp", "O3-T1-s999", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "CELL_ID" in err and "O9-T1-s11" in err and "s999" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_I83_a_lab_scenario_is_served_by_the_labs_own_mcp_server(tmp_path: Path) -> None:
    out = tmp_path / "lab-run"

    async def lab() -> tuple[set[str], dict[str, Any]]:
        async with cell_client("lost-create-response", out) as session:
            tools = {t.name for t in (await session.list_tools()).tools}
            finished = await session.call_tool("finish_run", {"output": "nothing done"})
            return tools, json.loads(_text(finished))

    tools, body = anyio.run(lab)
    assert {"get_context", "sleep", "finish_run"} <= tools
    assert body["record"] == str(out / "run.json") and (out / "run.json").is_file()
    assert "gate" in body


@pytest.mark.slow
def test_I154_an_mcp_session_leaves_a_results_file_and_a_row_read_from_its_records(
        tmp_path: Path) -> None:
    """Serving a baseline and then a fault cell builds one row of the MCP client's
    candidate matrix; rescore, report, inspect and export read it from its records."""
    import subprocess

    import junitparser

    out = tmp_path / "out"

    async def both() -> None:
        async with cell_client("baseline-T1-s11", out) as session:
            await _pipeline(session)
        async with cell_client("O3-T1-s11", out) as session:
            await _pipeline(session)

    anyio.run(both)
    results = json.loads((out / "results.json").read_text())
    rows = results["scoreboard"]["rows"]
    assert [r["row"] for r in rows] == ["mcp_client-default"]
    assert rows[0]["sabot_score"]["k"] == 1 and rows[0]["sabot_score"]["n"] == 1
    assert {c["cell_id"] for c in results["cells"]} == {
        "mcp_client-default-baseline-T1-s11", "mcp_client-default-O3-T1-s11"}
    assert results["selection"]["complete"] is True
    manifests = sorted((out / "sessions").glob("*.json"))
    assert len(manifests) == 2  # one session per served cell, both kept
    assert all(json.loads(m.read_text())["outside_row"] == "mcp_client" for m in manifests)
    assert (out / "RESULTS.md").is_file() and (out / "report.html").is_file()
    assert "mcp_client-default" in (out / "RESULTS.md").read_text()
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path}

    def sabot(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "import sys; from pytest_sabot.commands.cli import main; "
             "sys.exit(main(sys.argv[1:]))", *args],
            capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False)

    rescored = sabot("rescore", str(out))
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    assert "identical to results.json" in rescored.stdout
    reported = sabot("report", str(out))
    assert reported.returncode == 0, reported.stdout + reported.stderr
    inspected = sabot("inspect", str(out / "cells" / "mcp_client-default-O3-T1-s11"))
    assert inspected.returncode == 0, inspected.stdout + inspected.stderr
    assert "DETECTED_HARD" in inspected.stdout
    junit = tmp_path / "cells.xml"
    exported = sabot("export", str(out), "--format", "junit", "--out", str(junit))
    assert exported.returncode == 0, exported.stdout + exported.stderr
    replayed = sabot("replay", str(out / "cells" / "mcp_client-default-O3-T1-s11"))
    assert replayed.returncode == 2, replayed.stdout + replayed.stderr
    assert "sabot mcp CELL_ID" in replayed.stderr  # its client is the pipeline: said
    cases = [case for suite in junitparser.JUnitXml.fromfile(str(junit)) for case in suite]
    assert any("mcp_client-default-O3-T1-s11" in case.name for case in cases)
