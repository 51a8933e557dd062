"""A trusted local agent as the pipeline of a Sabot wave (SPEC.md I82, docs/TRUSTED_AGENTS.md):
``pytest --sabot-wave=3 --sabot-agent pkg.agent:run --trust-local-agent``. Each test writes
a user's package and runs a real pytest session in a child process from that directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_sabot.trusted.sabot import deadline_for, refusal

REPO = Path(__file__).resolve().parents[2]

# A small pipeline of the user's own: a worker with tools, a reviewer, one revision; it
# writes what it was given to seen.json so the test can read the start message's content.
GOOD_AGENT = '''
import json
from pathlib import Path

from openai import OpenAI


def _client(ctx, agent):
    endpoint = ctx.model(agent)
    client = OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key, max_retries=0)
    return client, endpoint.model


def _messages(prompt):
    return [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}]


def run(ctx):
    Path("@WORKDIR@/seen.json").write_text(json.dumps({
        "task": [ctx.task.system, ctx.task.user], "capabilities": ctx.capabilities,
        "config": ctx.config, "tools": [t.model_dump() for t in ctx.tools],
        "models": [ctx.model(a).model_dump() for a in ("worker", "reviewer")],
    }))
    worker, model = _client(ctx, "worker")
    reviewer, _ = _client(ctx, "reviewer")
    tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
              "parameters": t.parameters}} for t in ctx.tools]
    prompt, delivered = ctx.task, ""
    for round in (0, 1):
        messages = _messages(prompt)
        for _ in range(ctx.capabilities["max_tool_model_calls"]):
            message = worker.chat.completions.create(
                model=model, messages=messages, tools=tools).choices[0].message
            if not message.tool_calls:
                break
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments or "{}")
                seen = ctx.call_tool(call.function.name, arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": seen})
        else:
            reply = worker.chat.completions.create(model=model, messages=messages)
            message = reply.choices[0].message
        delivered = ctx.handoff("worker", "reviewer", message.content or "")
        review = reviewer.chat.completions.create(
            model=model, messages=_messages(ctx.reviewer_prompt(delivered, round))
        ).choices[0].message.content or ""
        ctx.checks.review(review, round=round)
        last = review.strip().splitlines()[-1] if review.strip() else ""
        if round == 0 and "REJECT" in last.upper():
            reason = last.split("REJECT", 1)[1].strip(" -:") or review
            ctx.checks.retry(reason)
            prompt = ctx.worker_prompt(1, reason)
            continue
        break
    return delivered
'''

SLEEPER = '''
import time


def run(ctx):
    time.sleep(120)
    return "never"
'''

# Prints its endpoint (as an HTTP library logging its requests would) and crashes; it keeps
# what it printed outside the records, in leak.txt, for the test to look for.
CRASHER = '''
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit


def run(ctx):
    endpoint = ctx.model("worker")
    path = urlsplit(endpoint.base_url).path
    Path("@WORKDIR@/leak.txt").write_text(path + "\\n" + endpoint.api_key)
    print("calling", endpoint.base_url, "with", endpoint.api_key)
    print("about to crash", flush=True)
    sys.stdout.flush()
    os._exit(3)
'''

# Ignores the supervisor's SIGTERM, waits past the deadline, then tries the write tool.
LATE_WRITER = '''
import signal
import time


def run(ctx):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    write = next(t for t in ctx.tools if t.annotations.get("role") == "write")
    time.sleep(4)
    try:
        ctx.call_tool(write.name, {"path": "late.txt", "content": "after the deadline"})
    except Exception as exc:
        print("refused:", type(exc).__name__, exc, flush=True)
    time.sleep(60)
'''


def _package(root: Path, source: str) -> str:
    package = root / "myagent"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "agent.py").write_text(textwrap.dedent(source).replace("@WORKDIR@", str(root)))
    return "myagent.agent:run"


def _session(cwd: Path, *args: str, out: bool = True, wave: str = "3",
             task: str = "T1") -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(cwd), str(REPO), os.environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-p", "no:xdist", f"--sabot-wave={wave}", f"--sabot-task={task}", "--sabot-seed=11",
         *([f"--sabot-out={cwd / 'out'}"] if out else []), *args],
        cwd=cwd, env={**os.environ, "PYTHONPATH": path.rstrip(os.pathsep)},
        capture_output=True, text=True, timeout=600, check=False,
    )


def _results(cwd: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((cwd / "out" / "results.json").read_text())
    return data


def _events(cwd: Path, cell: str) -> list[dict[str, Any]]:
    text = (cwd / "out" / "cells" / cell / "events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.slow
def test_I82_an_agent_without_the_trust_flag_is_refused_before_anything_runs(
        tmp_path: Path) -> None:
    target = _package(tmp_path, GOOD_AGENT)
    done = _session(tmp_path, f"--sabot-agent={target}")
    text = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, text
    assert "--trust-local-agent" in text and "not sandboxed" in text
    assert "Traceback" not in text
    assert not (tmp_path / "out").exists() and not (tmp_path / "seen.json").exists()


def test_I82_a_target_that_is_not_a_callable_path_or_cannot_be_found_is_refused() -> None:
    assert "package.module:callable" in str(refusal("myagent.agent", True))
    assert "no module 'nosuchpackage_xyz'" in str(refusal("nosuchpackage_xyz.a:run", True))
    assert refusal(None, False) is None


def test_I82_the_deadline_stays_inside_the_attempts_time_limit() -> None:
    assert deadline_for(300) == 295
    assert deadline_for(6) == 3
    assert deadline_for(0) == 300  # no attempt limit: the agent still has one


@pytest.mark.slow
def test_I82_a_trusted_agent_runs_as_the_waves_pipeline_and_is_scored(tmp_path: Path) -> None:
    target = _package(tmp_path, GOOD_AGENT)
    done = _session(tmp_path, f"--sabot-agent={target}", "--trust-local-agent",
                    "--sabot-operator=O3", "--sabot-model=sim:vigilant")
    assert done.returncode == 0, done.stdout + done.stderr
    results = _results(tmp_path)
    assert [r["row"] for r in results["scoreboard"]["rows"]] == ["myagent_agent_run-default"]
    cells = {c["cell_id"]: c for c in results["cells"]}
    assert cells["myagent_agent_run-default-baseline-T1-s11"]["status"] == "passed"
    fault = cells["myagent_agent_run-default-O3-T1-s11"]
    assert fault["excluded"] is None, fault
    assert fault["detection"] == "DETECTED_HARD", fault
    assert "reject-reviewer" in {a["row"] for a in fault["acts"]}
    events = _events(tmp_path, "myagent_agent_run-default-O3-T1-s11")
    kinds = [e["kind"] for e in events]
    assert {"model_call", "tool_call", "message", "review", "injection", "artifact"} <= set(kinds)
    # The agent's model calls went through the run's endpoint and precede its review.
    assert kinds.index("model_call") < kinds.index("review")
    # What crossed to the child: the public task, capabilities, catalog, endpoints only.
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert set(seen) == {"task", "capabilities", "config", "tools", "models"}
    # The run's keys are random tokens: one may spell "O3" by chance, so they are left out.
    keyless = [{k: v for k, v in m.items() if k != "api_key"} for m in seen["models"]]
    text = json.dumps({**seen, "models": keyless})
    for private in ("O3", "operator", "seed", "pass_criteria", "ground_truth", "anchors",
                    "T1.private", "rules.yaml"):
        assert private not in text, private
    assert all(m["base_url"].startswith("http://127.0.0.1:") for m in seen["models"])
    assert "OPENAI_API_KEY" not in text


@pytest.mark.slow
def test_I82_a_trusted_agent_runs_the_cells_of_the_lab_matrix(tmp_path: Path) -> None:
    """Before, every cell of ``--sabot-wave=lab`` with a trusted agent was an error: the
    row name ``local_agent`` made a scenario name outside the pattern."""
    target = _package(tmp_path, GOOD_AGENT)
    done = _session(tmp_path, f"--sabot-agent={target}", "--trust-local-agent",
                    "--sabot-operator=O8", "--sabot-model=sim:vigilant", wave="lab",
                    task="T6")
    text = done.stdout + done.stderr
    assert done.returncode == 0, text
    cells = {c["cell_id"]: c for c in _results(tmp_path)["cells"]}
    assert set(cells) == {"myagent_agent_run-default-baseline-T6-s11",
                          "myagent_agent_run-default-O8-T6-s11"}, text
    assert cells["myagent_agent_run-default-baseline-T6-s11"]["status"] == "passed"
    assert cells["myagent_agent_run-default-O8-T6-s11"]["excluded"] is None
    for cell in cells:
        record = json.loads((tmp_path / "out" / "cells" / cell / "run.json").read_text())
        assert record["scenario"]["name"] == cell.lower().replace("_", "-")
        assert record["gate"]["outcome"] == "pass", record["gate"]
    fault = json.loads((tmp_path / "out" / "cells" / "myagent_agent_run-default-O8-T6-s11" /
                        "run.json").read_text())
    assert [c["status"] for c in fault["coverage"]] == ["activated"]


@pytest.mark.slow
def test_I82_an_agent_past_its_deadline_is_stopped_and_recorded_as_a_run_error(
        tmp_path: Path) -> None:
    target = _package(tmp_path, SLEEPER)
    done = _session(tmp_path, f"--sabot-agent={target}", "--trust-local-agent",
                    "--sabot-timeout=6", "-k", "baseline")
    text = done.stdout + done.stderr
    assert "Traceback" not in done.stdout, text
    cell = {c["cell_id"]: c for c in _results(tmp_path)["cells"]}[
        "myagent_agent_run-default-baseline-T1-s11"]
    assert cell["status"] == "RUN_ERROR", cell
    events = _events(tmp_path, "myagent_agent_run-default-baseline-T1-s11")
    error = next(e for e in events if e["kind"] == "run_error")
    assert error["data"]["error_type"] == "TimeoutError"
    assert "real-time deadline of 3 s" in error["data"]["message"]
    assert events[-1]["data"]["status"] == "timeout"
    report = json.loads(
        (tmp_path / "out" / "cells" / "myagent_agent_run-default-baseline-T1-s11" /
         "agent-process-1.json").read_text())
    assert report["ended"] == "stopped_at_deadline" and report["timeout_s"] == 3


@pytest.mark.slow
def test_I82_an_agent_that_crashes_is_a_recorded_run_error(tmp_path: Path) -> None:
    target = _package(tmp_path, CRASHER)
    done = _session(tmp_path, f"--sabot-agent={target}", "--trust-local-agent",
                    "-k", "baseline")
    cell = {c["cell_id"]: c for c in _results(tmp_path)["cells"]}[
        "myagent_agent_run-default-baseline-T1-s11"]
    assert cell["status"] == "RUN_ERROR", (cell, done.stdout)
    events = _events(tmp_path, "myagent_agent_run-default-baseline-T1-s11")
    error = next(e for e in events if e["kind"] == "run_error")
    assert error["data"]["error_type"] == "AgentProcessExited"
    assert "exited with code 3" in error["data"]["message"]
    assert "about to crash" in error["data"]["message"]  # the tail of the agent's log
    assert "calling http://127.0.0.1:" in error["data"]["message"]


@pytest.mark.slow
def test_I82_the_gateway_secret_an_agent_prints_reaches_no_record(tmp_path: Path) -> None:
    target = _package(tmp_path, CRASHER)
    _session(tmp_path, f"--sabot-agent={target}", "--trust-local-agent", "-k", "baseline")
    path, token = (tmp_path / "leak.txt").read_text().split("\n")
    assert path == "/v1" and token.startswith("sabot-run-")  # no secret in the URL (I117)
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert any(p.name == "agent-1.log" for p in files)
    for found in files:
        assert token not in found.read_text(errors="replace"), found
    run_dir = tmp_path / "out" / "cells" / "myagent_agent_run-default-baseline-T1-s11"
    assert "calling http://127.0.0.1:" in (run_dir / "agent-1.log").read_text()
    assert "[REDACTED]" in (run_dir / "agent-1.log").read_text()


@pytest.mark.slow
def test_I82_an_effect_after_the_deadline_is_refused_and_kept_as_late(tmp_path: Path) -> None:
    target = _package(tmp_path, LATE_WRITER)
    _session(tmp_path, f"--sabot-agent={target}", "--trust-local-agent",
             "--sabot-timeout=6", "-k", "baseline")
    run_dir = tmp_path / "out" / "cells" / "myagent_agent_run-default-baseline-T1-s11"
    report = json.loads((run_dir / "agent-process-1.json").read_text())
    assert report["ended"] == "stopped_at_deadline"
    assert report["late_total"] == 1
    assert report["late"][0]["kind"] == "tool_call"
    assert report["late"][0]["arguments"] == {"path": "late.txt",
                                              "content": "after the deadline"}
    events = _events(tmp_path, "myagent_agent_run-default-baseline-T1-s11")
    assert not [e for e in events if e["kind"] in ("tool_call", "effect")]
    assert not list(run_dir.rglob("late.txt"))
    assert "refused: Refusal" in (run_dir / "agent-1.log").read_text()


@pytest.mark.slow
def test_I81_an_agents_records_default_to_a_directory_of_their_own(tmp_path: Path) -> None:
    target = _package(tmp_path, CRASHER)
    _session(tmp_path, f"--sabot-agent={target}", "--trust-local-agent", "-k", "baseline",
             out=False)
    results = json.loads((tmp_path / "reports" / "wave3-myagent-agent-run" / "results.json")
                         .read_text())
    assert [c["cell_id"] for c in results["cells"]] == ["myagent_agent_run-default-baseline-T1-s11"]
    assert not (tmp_path / "reports" / "wave-3").exists()  # never among the wave's records


# Fails as if the disk were full (or as an agent does in the read-only sandbox).
DISK_FULL = '''
import errno


def run(ctx):
    raise OSError(errno.ENOSPC, "No space left on device")
'''


@pytest.mark.slow
def test_I117_an_agents_own_write_error_is_its_run_error_never_the_harnesss(
        tmp_path: Path) -> None:
    """Before, the text of the agent's own OSError stopped the whole session as if the
    harness could not write its records."""
    target = _package(tmp_path, DISK_FULL)
    done = _session(tmp_path, f"--sabot-agent={target}", "--trust-local-agent",
                    "--sabot-operator=baseline,O3")
    text = done.stdout + done.stderr
    assert "the output could not be written" not in text, text
    results = _results(tmp_path)
    assert results["selection"]["recorded"] == 2, text
    cell = {c["cell_id"]: c for c in results["cells"]}["myagent_agent_run-default-baseline-T1-s11"]
    assert cell["status"] == "RUN_ERROR", cell


@pytest.mark.slow
def test_a_trusted_agents_cell_replays_with_the_trust_flag_and_is_refused_without_it(
        tmp_path: Path) -> None:
    """sabot replay loads the matrix the cell's session ran (the agent's row, from its
    manifest) and runs the agent again only when trusted to; the replay is verified."""
    target = _package(tmp_path, GOOD_AGENT)
    done = _session(tmp_path, f"--sabot-agent={target}", "--trust-local-agent",
                    "--sabot-operator=O3", "--sabot-model=sim:vigilant")
    assert done.returncode == 0, done.stdout + done.stderr
    cell = tmp_path / "out" / "cells" / "myagent_agent_run-default-O3-T1-s11"
    path = os.pathsep.join([str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path.rstrip(os.pathsep)}

    def replay(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest_sabot.commands.cli", "replay", str(cell),
             "--json", *extra], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=600, check=False)

    refused = replay()
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "--trust-local-agent" in refused.stderr and target in refused.stderr
    replayed = replay("--trust-local-agent")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    report = json.loads(replayed.stdout)
    assert report["reproduction"] == "verified", report
