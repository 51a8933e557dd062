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


def _program(cell: str, out: Path, env: dict[str, str] | None = None) -> Any:
    """``sabot mcp`` run as the program (``main()`` with no arguments), on raw pipes."""
    import subprocess

    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "pytest_sabot.commands.cli", "mcp", cell, "--out", str(out),
         "--sabot-model=sim:vigilant"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": path, **(env or {})}, cwd=str(ROOT), text=True)


def _initialized(server: Any) -> None:
    """Speak the protocol's first request, so the server is serving when this returns."""
    server.stdin.write(json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "sabot-test", "version": "1"}}}) + "\n")
    server.stdin.flush()
    assert '"id":1' in server.stdout.readline().replace(" ", "")


@pytest.mark.slow
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_I83_a_server_stopped_by_a_signal_records_a_run_error_and_ends(
        tmp_path: Path, signal_name: str) -> None:
    import signal

    out = tmp_path / "out"
    server = _program("baseline-T1-s11", out)
    try:
        _initialized(server)
        server.send_signal(getattr(signal, signal_name))
        server.wait(timeout=60)  # its stdin is still open: the process ends by itself
    finally:
        server.kill()
    assert server.returncode == 0, server.stderr.read()
    events = _events(out, "mcp_client-default-baseline-T1-s11")
    error = next(e for e in events if e["kind"] == "run_error")
    assert f"stopped ({signal_name}) before sabot_finish" in error["data"]["message"]
    assert events[-1]["kind"] == "run_end"
    assert (out / "results.json").is_file()


@pytest.mark.slow
def test_I83_the_lab_server_stopped_by_a_signal_records_its_run_cancelled(
        tmp_path: Path) -> None:
    import signal
    import subprocess

    out = tmp_path / "lab"
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    server = subprocess.Popen(
        [sys.executable, "-m", "pytest_sabot.lab", "mcp", "lost-create-response", "--out",
         str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": path}, cwd=str(tmp_path), text=True)
    try:
        _initialized(server)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    finally:
        server.kill()
    run = json.loads((out / "run.json").read_text())
    assert run["execution"]["status"] == "cancelled", run["execution"]
    assert "stopped (SIGTERM) before finish_run" in run["execution"]["detail"]


@pytest.mark.slow
def test_I83_the_finish_is_taken_once_and_nothing_sent_beside_it_reaches_the_run(
        tmp_path: Path) -> None:
    from mcp.shared.exceptions import McpError

    out = tmp_path / "out"

    async def race() -> tuple[list[CallToolResult], str]:
        answers: list[CallToolResult] = []
        async with cell_client("baseline-T1-s11", out) as session:
            await session.call_tool("sabot_context", {})

            async def send(name: str, arguments: dict[str, Any]) -> None:
                answers.append(await session.call_tool(name, arguments))

            async with anyio.create_task_group() as group:
                for text in ("FIRST", "SECOND", "THIRD"):
                    group.start_soon(send, "sabot_finish", {"output": text})
                group.start_soon(send, "sabot_handoff", {"sender": "worker",
                                                         "receiver": "reviewer", "text": "x"})
            try:
                await session.read_resource("sabot://cell/context")  # type: ignore[arg-type]
            except McpError as exc:
                refused = str(exc)
            else:
                refused = "read"
        return answers, refused

    answers, refused = anyio.run(race)
    finishes = [a for a in answers if not a.isError and "verdict" in _text(a)]
    assert len(finishes) == 1, [_text(a) for a in answers]
    others = [a for a in answers if a not in finishes]
    assert all(a.isError and "the run is finished" in _text(a) for a in others), \
        [_text(a) for a in others if not a.isError]
    assert "the run is finished" in refused
    artifacts = [e for e in _events(out, "mcp_client-default-baseline-T1-s11")
                 if e["kind"] == "artifact"]
    assert len(artifacts) == 1


@pytest.mark.slow
def test_I83_results_are_written_before_the_finish_is_answered(tmp_path: Path) -> None:
    """What the client does to the output after its finish is not what the session says:
    results.json is written before the answer, and a rescore names the change."""
    import subprocess

    out = tmp_path / "out"
    cell = "mcp_client-default-baseline-T1-s11"

    async def finish_then_tamper() -> str:
        async with cell_client("baseline-T1-s11", out) as session:
            await session.call_tool("sabot_context", {})
            await session.call_tool("sabot_finish", {"output": "nothing"})
            written = (out / "results.json").read_text()
            outcome = out / "cells" / cell / "outcome.json"
            record = json.loads(outcome.read_text())
            record["passed"] = not record["passed"]
            outcome.write_text(json.dumps(record))
        return written

    written = anyio.run(finish_then_tamper)
    assert (out / "results.json").read_text() == written
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    rescored = subprocess.run(
        [sys.executable, "-m", "pytest_sabot.commands.cli", "rescore", str(out)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}, check=False)
    assert "DIFFERS from results.json" in rescored.stdout, rescored.stdout + rescored.stderr


@pytest.mark.slow
def test_I106_a_provider_key_in_the_servers_environment_never_reaches_a_record(
        tmp_path: Path) -> None:
    key = "sk-test-door-0123456789abcdef"
    out = tmp_path / "out"
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)

    async def leak(cell: str, where: Path, finish: str, output: str) -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "pytest_sabot.commands.cli", "mcp", cell, "--out", str(where)],
            env={**os.environ, "PYTHONPATH": path, "OPENAI_API_KEY": key}, cwd=str(ROOT))
        async with (stdio_client(params) as (read, write),
                    ClientSession(read, write) as session):
            await session.initialize()
            if finish == "sabot_finish":
                await session.call_tool("sabot_report", {
                    "kind": "escalation", "component": "reviewer", "text": f"key {key}",
                    "data": {"mechanism": "human", "message": key}})
            await session.call_tool(finish, {"output": output})

    anyio.run(leak, "baseline-T1-s11", out, "sabot_finish", f"{{\"key\": \"{key}\"}}")
    anyio.run(leak, "lost-create-response", tmp_path / "lab", "finish_run", f"done {key}")
    leaked = [str(p) for p in tmp_path.rglob("*")
              if key in p.name or (p.is_file() and key.encode() in p.read_bytes())]
    assert leaked == []
    assert "REDACTED" in (out / "cells" / "mcp_client-default-baseline-T1-s11"
                          / "events.jsonl").read_text()
