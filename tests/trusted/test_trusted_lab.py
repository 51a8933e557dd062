"""A trusted local agent in the lab (docs/TRUSTED_AGENTS.md, rules TA1-TA6 and TA8):
``--agent package.module:callable --trust-local-agent`` runs a user's callable in a
supervised child process; the parent owns the world, the evidence and the clock."""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from trusted_helpers import parsed, run_trusted, scenario_file, user_package

from pytest_sabot.commands.lab import main
from pytest_sabot.lab.agent import LabAgent
from pytest_sabot.lab.controllers import naive, resilient
from pytest_sabot.lab.engine import run_scenario
from pytest_sabot.lab.record import LabRun, read_run
from pytest_sabot.lab.replay import replay_run
from pytest_sabot.lab.scenario_load import resolve_scenario
from pytest_sabot.lab.trusted import TrustedLabAgent
from pytest_sabot.lab.world.store import World
from pytest_sabot.report.lab import run_text

SAME = ("streams", "waits", "world_initial", "world_final", "coverage", "execution", "gate",
        "agent_view", "measurement")


def _same_run(a: LabRun, b: LabRun) -> dict[str, Any]:
    """The parts of two records that differ (the agent's name, timings and process aside)."""
    return {part: (getattr(a, part), getattr(b, part)) for part in SAME
            if getattr(a, part) != getattr(b, part)}


def _in_process(scenario: Path | str, fn: Any) -> LabRun:
    path = resolve_scenario(str(scenario)) if isinstance(scenario, str) else scenario
    return run_scenario(parsed(path), LabAgent("in-process", "python", fn), None)


# --------------------------------------------------------------------------- TA2 routing


@pytest.mark.slow
def test_TA2_a_trusted_agent_is_recorded_exactly_as_the_same_callable_in_process(
        workdir: Path) -> None:
    user_package(workdir, "helpdesk_bot", """
        from pytest_sabot.lab.controllers import naive, resilient

        def careful(context):
            return resilient(context)

        async def careful_async(context):
            return resilient(context)

        def hasty(context):
            return naive(context)
    """)
    code, careful = run_trusted("lost-create-response", "helpdesk_bot.agent:careful",
                                workdir / "careful")
    assert code == 0 and careful is not None and careful.gate.outcome == "pass"
    assert _same_run(careful, _in_process("lost-create-response", resilient)) == {}
    assert careful.agent.name == "helpdesk_bot.agent:careful" and careful.agent.kind == "python"
    proc = careful.process
    assert proc is not None and (proc.ended, proc.exit_code, proc.late) == ("finished", 0, [])
    assert proc.requests == careful.measurement.routed_calls + careful.measurement.waits

    code, awaited = run_trusted("lost-create-response", "helpdesk_bot.agent:careful_async",
                                workdir / "async")
    assert code == 0 and awaited is not None and _same_run(awaited, careful) == {}

    code, hasty = run_trusted("lost-create-response", "helpdesk_bot.agent:hasty",
                              workdir / "hasty")
    assert code == 1 and hasty is not None
    assert [v.rule for v in hasty.gate.violations] == ["LS1", "LC1"]
    assert _same_run(hasty, _in_process("lost-create-response", naive)) == {}
    assert replay_run(hasty).reproduction == "verified"


def test_TA2_limits_malformed_calls_and_bad_waits_reach_the_child_as_in_process(
        workdir: Path) -> None:
    user_package(workdir, "edge_bot", """
        from pytest_sabot.lab.agent import LimitReached

        class Odd:
            def __repr__(self):
                return "Odd()"

        def until_refused(context):
            made = 0
            for _ in range(10):
                try:
                    context.call_tool("get_customer", {"customer_id": context.task.customer_id})
                except LimitReached as exc:
                    return f"stopped after {made}: {type(exc).__name__}: {exc}"
                made += 1
            return "never stopped"

        def odd(context):
            shown = context.call_tool("get_customer", {"customer_id": Odd()})
            context.call_tool("no_such_tool", {})
            print("shown", shown.error.code)
            context.sleep(-5)
    """)
    edge = importlib.import_module("edge_bot.agent")  # the same callables, in process

    small = scenario_file(workdir, "small.yaml",
                          lambda d: d["limits"].update(max_tool_calls=3))
    code, limited = run_trusted(small, "edge_bot.agent:until_refused", workdir / "limit")
    assert code == 3 and limited is not None
    assert limited.execution.status == "budget_exhausted"
    assert limited.execution.output == ("stopped after 3: LimitReached: the run stopped: "
                                        "budget_exhausted")
    assert limited.execution.refused is not None and limited.execution.refused.tool == \
        "get_customer"
    assert _same_run(limited, _in_process(small, edge.until_refused)) == {}

    code, strange = run_trusted("lost-create-response", "edge_bot.agent:odd", workdir / "odd")
    assert code == 3 and strange is not None
    assert strange.streams.requests[0].arguments == {"unreadable": "{'customer_id': Odd()}"}
    assert [o.observation.error.code for o in strange.streams.observations
            if o.observation.error] == ["invalid_arguments", "unknown_tool"]
    assert strange.execution.detail == ("ValueError: sleep takes a whole number of "
                                        "milliseconds >= 0, got -5")
    assert _same_run(strange, _in_process("lost-create-response", edge.odd)) == {}


def test_TA2_an_exception_in_the_callable_is_an_agent_error_as_in_process(
        workdir: Path) -> None:
    user_package(workdir, "raising_bot", """
        def run(context):
            context.call_tool("get_customer", {"customer_id": context.task.customer_id})
            raise ValueError("the model said no")
    """)
    run = importlib.import_module("raising_bot.agent").run
    code, record = run_trusted("lost-create-response", "raising_bot.agent:run", workdir / "o")
    assert code == 3 and record is not None
    assert record.execution.detail == "ValueError: the model said no"
    assert record.process is not None and record.process.ended == "failed"
    assert _same_run(record, _in_process("lost-create-response", run)) == {}
    log = (workdir / "o" / record.process.log_file).read_text()
    assert "Traceback" in log and "ValueError: the model said no" in log


# --------------------------------------------------------------------------- TA1 the view


def test_TA1_the_child_is_given_only_the_public_task_capabilities_and_catalog(
        workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def private(data: dict[str, Any]) -> None:
        data["name"] = "zq-private-name"
        data["description"] = "zq-private-description"
        data["faults"][0]["id"] = "zq-private-fault"
        data["world"]["existing_tickets"] = [{
            "request_key": "ZQPRIV-1", "customer_id": "C-104",
            "subject": "zq-private-subject", "priority": "low"}]

    path = scenario_file(workdir, "zq-private-file.yaml", private)
    background = [c.email for c in World(parsed(path)).current.customers.values()
                  if c.customer_id != "C-104"]
    assert background  # the seeded world holds customers the task never names
    monkeypatch.setenv("OPENAI_API_KEY", "sk-zq-private-key")
    monkeypatch.setenv("SABOT_ZQ_PRIVATE", "zq-private-setting")
    monkeypatch.setenv("NOSY_BOT_MODE", "careful")  # the one variable passed on purpose
    user_package(workdir, "nosy_bot", """
        import gc, json, os, sys

        def run(context):
            seen, visited, stack = set(), set(), gc.get_objects()
            while stack:  # everything reachable from a tracked object, untracked ones too
                obj = stack.pop()
                if id(obj) in visited:
                    continue
                visited.add(id(obj))
                if isinstance(obj, str):
                    seen.add(obj)
                elif isinstance(obj, (bytes, bytearray)):
                    seen.add(bytes(obj).decode("utf-8", "replace"))
                else:
                    stack.extend(gc.get_referents(obj))
            fds = {fd: os.readlink(f"/proc/self/fd/{fd}")
                   for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}")}
            with open("@WORKDIR@/dump.json", "w") as out:
                json.dump({"strings": sorted(seen), "environ": dict(os.environ),
                           "argv": sys.argv, "briefing": context.briefing(),
                           "cwd": os.getcwd(), "cwd_entries": os.listdir("."),
                           "fds": fds}, out)
            return "looked around"
    """)
    code, record = run_trusted(path, "nosy_bot.agent:run", workdir / "out",
                               "--agent-env", "NOSY_BOT_MODE")
    assert code == 1 and record is not None  # it did nothing: completion fails
    dump = json.loads((workdir / "dump.json").read_text())
    text = json.dumps(dump)
    assert len(dump["strings"]) > 1000  # the walk did see the child's memory,
    assert "Invoice shows the wrong VAT rate" in dump["strings"]  # the task it was given
    markers = ["zq-private", "ZQPRIV", str(path), "lost-create-response", *background]
    assert [m for m in markers if m in text] == []
    assert "OPENAI_API_KEY" not in dump["environ"]
    assert dump["environ"]["NOSY_BOT_MODE"] == "careful"
    allowed = {"NOSY_BOT_MODE", "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE",
               "TZ", "TMPDIR", "TEMP", "TMP", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONUNBUFFERED"}
    assert {k for k in dump["environ"] if not k.startswith("LC_")} <= allowed
    assert dump["argv"][1:3] == ["--in", dump["argv"][2]] and len(dump["argv"]) == 5
    assert dump["argv"][0].endswith(os.path.join("trusted", "child.py"))
    assert json.loads(dump["briefing"]) == record.agent_view.model_dump(mode="json")
    # Its working directory is a fresh empty one, and no descriptor it holds names a file
    # (stdout and stderr are a pipe the parent copies into the log).
    assert dump["cwd"] != str(workdir) and dump["cwd_entries"] == []
    assert dump["fds"]["0"] == "/dev/null"
    assert dump["fds"]["1"].startswith("pipe:") and dump["fds"]["2"] == dump["fds"]["1"]
    assert [t for t in dump["fds"].values() if str(workdir) in t] == []


# --------------------------------------------------------------------------- TA3 deadline


@pytest.mark.slow
def test_TA3_at_the_real_time_deadline_the_child_is_stopped_and_the_run_is_inconclusive(
        workdir: Path) -> None:
    user_package(workdir, "slow_bot", """
        import time

        def run(context):
            context.call_tool("get_customer", {"customer_id": context.task.customer_id})
            time.sleep(600)
    """)
    code, record = run_trusted("lost-create-response", "slow_bot.agent:run", workdir / "o",
                               "--agent-timeout", "2")
    assert code == 3 and record is not None
    assert record.execution.status == "deadline_exceeded"
    assert record.execution.detail == ("the real-time deadline of 2 s passed; the agent "
                                       "process was stopped")
    assert record.gate.outcome == "inconclusive"
    proc = record.process
    assert proc is not None and (proc.ended, proc.signal, proc.late) == (
        "stopped_at_deadline", "SIGTERM", [])
    assert replay_run(record).reproduction == "verified"


@pytest.mark.slow
def test_TA3_an_effect_requested_after_the_deadline_is_refused_and_recorded_as_late(
        workdir: Path) -> None:
    user_package(workdir, "stubborn_bot", """
        import signal, threading
        from pytest_sabot.lab.agent import LimitReached

        def run(context):
            told = threading.Event()
            signal.signal(signal.SIGTERM, lambda *_: told.set())
            t = context.task
            context.call_tool("get_customer", {"customer_id": t.customer_id})
            while not told.wait(0.05):
                pass
            try:  # asked to stop, it tries one more write
                context.call_tool("create_ticket", {
                    "customer_id": t.customer_id, "request_key": t.request_key,
                    "subject": t.subject, "priority": t.priority})
            except LimitReached as exc:
                print("refused:", exc)
            return "kept going"
    """)
    code, record = run_trusted("lost-create-response", "stubborn_bot.agent:run",
                               workdir / "o", "--agent-timeout", "2")
    assert code == 3 and record is not None
    proc = record.process
    assert proc is not None and proc.ended == "stopped_at_deadline"
    assert [(r.kind, r.tool) for r in proc.late] == [("tool_call", "create_ticket")]
    assert proc.late[0].arguments is not None and proc.late[0].arguments["request_key"] == \
        "REQ-7731"
    assert [r.tool for r in record.streams.requests] == ["get_customer"]
    assert record.streams.effects == [] and record.world_final.tickets == \
        record.world_initial.tickets
    assert record.execution.status == "deadline_exceeded" and record.execution.output == ""
    log = (workdir / "o" / proc.log_file).read_text()
    assert "refused: the real-time deadline of 2 s passed; the run is over" in log
    assert "1 late requests refused" in run_text(record)


@pytest.mark.slow
def test_TA3_once_the_runs_own_limit_is_reached_later_requests_are_late_and_a_child_that_stays_is_stopped(  # noqa: E501
        workdir: Path) -> None:
    user_package(workdir, "looping_bot", """
        from pytest_sabot.lab.agent import LimitReached

        def run(context):
            refused = 0
            while refused < 4:
                try:
                    context.call_tool("get_customer", {"customer_id": context.task.customer_id})
                except LimitReached:
                    refused += 1
            context.sleep(5)  # refused too: the run is over
    """)
    small = scenario_file(workdir, "small.yaml", lambda d: d["limits"].update(max_tool_calls=2))
    user_package(workdir, "lingering_bot", """
        import time
        from pytest_sabot.lab.agent import LimitReached

        def run(context):
            try:
                for _ in range(3):
                    context.call_tool("get_customer", {"customer_id": context.task.customer_id})
            except LimitReached:
                time.sleep(600)  # told the run is over, it stays
    """)
    with TrustedLabAgent("looping_bot.agent:run", log_dir=workdir / "o", grace_s=0.5) as agent:
        record = run_scenario(parsed(small), agent.agent, workdir / "o")
    assert record.execution.status == "budget_exhausted"
    assert record.execution.refused is not None and record.execution.refused.tool == \
        "get_customer"
    assert [r.tool for r in record.streams.requests] == ["get_customer"] * 2
    proc = record.process
    assert proc is not None and proc.ended == "failed"  # the refused sleep raised
    assert [(r.kind, r.tool, r.ms) for r in proc.late] == [
        ("tool_call", "get_customer", None)] * 3 + [("sleep", None, 5)]
    assert proc.late_total == 4
    assert replay_run(record).reproduction == "verified"

    with TrustedLabAgent("lingering_bot.agent:run", log_dir=workdir / "p",
                         grace_s=0.5) as agent:
        record = run_scenario(parsed(small), agent.agent, workdir / "p")
    proc = record.process
    assert record.execution.status == "budget_exhausted" and record.gate.outcome == \
        "inconclusive"
    assert proc is not None and (proc.ended, proc.signal, proc.late) == (
        "stopped_after_end", "SIGTERM", [])
    assert proc.detail == ("the run ended (the run stopped: budget_exhausted); the agent "
                           "process did not return within 0.5 s and was stopped")


# --------------------------------------------------------------------------- TA4 crashes


def test_TA4_a_crash_is_recorded_with_its_exit_status_and_output(workdir: Path) -> None:
    user_package(workdir, "crashing_bot", """
        import os

        def run(context):
            context.call_tool("get_customer", {"customer_id": context.task.customer_id})
            print("about to crash", flush=True)
            os._exit(3)
    """)
    code, record = run_trusted("lost-create-response", "crashing_bot.agent:run",
                               workdir / "o")
    assert code == 3 and record is not None
    assert record.execution.status == "agent_error"
    assert record.execution.detail.startswith(
        "AgentProcessExited: the agent process exited with code 3 before it returned; "
        "last output:\n")
    assert record.execution.detail.endswith("about to crash")
    proc = record.process
    assert proc is not None and (proc.ended, proc.exit_code, proc.signal) == ("exited", 3,
                                                                              None)
    assert record.gate.outcome == "inconclusive" and record.gate.completion_judged is False
    assert replay_run(record).reproduction == "verified"


def test_TA4_a_violation_observed_before_the_process_died_still_fails_the_gate(
        workdir: Path) -> None:
    user_package(workdir, "killed_bot", """
        import os, signal

        def run(context):
            t = context.task
            context.call_tool("create_ticket", {
                "customer_id": t.customer_id, "request_key": t.request_key,
                "subject": t.subject, "priority": "low"})  # not the priority asked for
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    code, record = run_trusted("lost-create-response", "killed_bot.agent:run", workdir / "o")
    assert code == 1 and record is not None
    assert record.execution.status == "agent_error" and "signal SIGKILL" in \
        record.execution.detail
    assert record.process is not None and record.process.signal == "SIGKILL"
    assert [v.rule for v in record.gate.violations] == ["LS6"]


# --------------------------------------------------------------------------- TA5 the log


@pytest.mark.slow
def test_TA5_stdout_and_stderr_go_to_a_log_file_in_the_run_dir_never_overwritten(
        workdir: Path) -> None:
    user_package(workdir, "chatty_bot", """
        import subprocess, sys

        def run(context):
            print("to stdout")
            print("to stderr", file=sys.stderr)
            subprocess.run(["sh", "-c", "echo from-a-subprocess"], check=True)
            return "logged"
    """)
    out = workdir / "o"
    for _ in range(2):
        code, record = run_trusted("lost-create-response", "chatty_bot.agent:run", out)
        assert code == 1 and record is not None and record.execution.output == "logged"
    # The second run sets the first one's record and renderings aside; nothing is lost.
    assert sorted(p.name for p in out.iterdir()) == [
        "agent-1.log", "agent-2.log", "junit.prev-1.xml", "junit.xml", "report.html",
        "report.prev-1.html", "run.json", "run.prev-1.json"]
    assert record is not None and record.process is not None
    assert record.process.log_file == "agent-2.log"
    first = read_run(out / "run.prev-1.json").process
    assert first is not None and first.log_file == "agent-1.log"
    for name in ("agent-1.log", "agent-2.log"):
        assert (out / name).read_text().split() == ["to", "stdout", "to", "stderr",
                                                    "from-a-subprocess"]


# --------------------------------------------------------------------------- TA6 consent


def test_TA6_without_the_trust_flag_a_callable_is_refused_before_anything_runs(
        workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    user_package(workdir, "plain_bot", """
        from pathlib import Path

        def run(context):
            Path("@WORKDIR@/ran.txt").write_text("it ran")
    """)
    code = main(["run", "lost-create-response", "--agent", "plain_bot.agent:run",
                 "--out", str(workdir / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert "--agent" in err and "--trust-local-agent" in err and "not a sandbox" in err
    assert "Traceback" not in err
    assert not (workdir / "o").exists() and not (workdir / "ran.txt").exists()


@pytest.mark.parametrize(("source", "target", "expected"), [
    ("def run(context):\n    pass\n", "broken_bot.missing:run",
     "ModuleNotFoundError: No module named 'broken_bot.missing'"),
    ("raise RuntimeError('broken at import')\n", "broken_bot.agent:run",
     "RuntimeError: broken at import"),
    ("run = 42\n", "broken_bot.agent:run", "TypeError: broken_bot.agent:run is a int, not a "
     "callable"),
    ("def other(context):\n    pass\n", "broken_bot.agent:run",
     "AttributeError: module 'broken_bot.agent' has no attribute 'run'"),
])
def test_TA6_a_target_that_does_not_load_exits_2_before_the_run(
        workdir: Path, capsys: pytest.CaptureFixture[str], source: str, target: str,
        expected: str) -> None:
    user_package(workdir, "broken_bot", source)
    code, record = run_trusted("lost-create-response", target, workdir / "o")
    assert code == 2 and record is None
    err = capsys.readouterr().err
    assert "--agent" in err and expected in err and "Traceback" not in err


# --------------------------------------------------------------------------- TA8 interrupt


@pytest.mark.slow
def test_TA8_an_interrupt_stops_the_child_and_the_run_is_recorded_as_cancelled(
        workdir: Path) -> None:
    user_package(workdir, "patient_bot", """
        import os, time
        from pathlib import Path

        def run(context):
            context.call_tool("get_customer", {"customer_id": context.task.customer_id})
            Path("@WORKDIR@/child.pid").write_text(str(os.getpid()))
            time.sleep(600)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    parent = subprocess.Popen(
        [sys.executable, "-m", "pytest_sabot.lab", "run", "lost-create-response", "--agent",
         "patient_bot.agent:run", "--trust-local-agent", "--out", "o"],
        cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # Ctrl-C as a terminal delivers it, even when this test run was started in the
        # background (a shell's `cmd &` starts it with SIGINT ignored, and so its children).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    pid_file = workdir / "child.pid"
    for _ in range(1200):
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.05)
    child = int(pid_file.read_text())
    parent.send_signal(signal.SIGINT)
    _, err = parent.communicate(timeout=120)
    assert parent.returncode == 3, err
    assert "interrupted" in err
    record = read_run(workdir / "o")
    assert record.execution.status == "cancelled"
    assert record.process is not None and record.process.ended == "cancelled"
    assert [r.tool for r in record.streams.requests] == ["get_customer"]
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


# --------------------------------------------------------------------------- TA11 async


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lab-adapter"


def test_TA11_the_example_adapter_is_the_published_one_verbatim() -> None:
    text = (EXAMPLE / "customer_lookup.py").read_text()
    assert text.startswith("from agent_fault_lab.adapters import AgentContext, AgentResult\n")
    assert "async def run(context: AgentContext) -> AgentResult:" in text
    assert 'await context.call_tool(\n        "get_customer", {"customer_id": ' \
        'context.task["customer_id"]}\n    )' in text


def test_TA11_the_example_adapter_runs_unchanged_as_a_trusted_agent(
        workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: "'PublicTask' object is not subscriptable", then "object Observation can't
    be used in 'await' expression"."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(EXAMPLE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    code, record = run_trusted("lost-create-response", "customer_lookup:run",
                               workdir / "lookup")
    assert record is not None, code
    assert record.execution.status == "completed", record.execution
    assert record.execution.output == "Customer lookup succeeded: True"
    assert [(r.tool, r.arguments) for r in record.streams.requests] == [
        ("get_customer", {"customer_id": record.scenario.task.customer_id})]
    # It only reads a customer: it cannot pass the effectful task, and says so honestly.
    assert code == 1 and record.gate.outcome == "fail"
    assert {v.rule for v in record.gate.violations} == {"LC1", "LC2", "LC3"}
    assert replay_run(record).reproduction == "verified"


def test_TA11_an_async_agent_awaits_calls_and_waits_and_a_sync_agent_keeps_working(
        workdir: Path) -> None:
    user_package(workdir, "async_bot", """
        import asyncio

        from pytest_sabot.lab.agent import AgentResult


        async def careful(context):
            task = context.task
            args = {k: task[k] for k in ("customer_id", "request_key", "subject", "priority")}
            made = await context.call_tool("create_ticket", {**args, "operation_key": "c1"})
            while not made.ok:
                await context.sleep(made.error.retry_after_ms or 500)
                made = await context.call_tool("create_ticket", {**args, "operation_key": "c1"})
            ticket = made.result["ticket"]
            both = await asyncio.gather(
                context.call_tool("get_ticket", {"ticket_id": ticket["ticket_id"]}),
                context.call_tool("get_customer", {"customer_id": task["customer_id"]}))
            assigned = await context.call_tool("assign_ticket", {
                "ticket_id": ticket["ticket_id"], "assignee_id": task["assignee_id"],
                "expected_version": both[0].result["ticket"]["version"],
                "operation_key": "a1"})
            await context.call_tool("notify_customer", {
                "customer_id": task["customer_id"], "ticket_id": ticket["ticket_id"],
                "message": task["message"], "operation_key": "n1"})
            return AgentResult(output=f"assigned: {assigned.ok}")


        def plain(context):
            seen = context.call_tool("get_customer", {"customer_id": context.task.customer_id})
            context.sleep(250)
            return f"customer: {seen.ok}"
    """)
    code, awaited = run_trusted("lost-create-response", "async_bot.agent:careful",
                                workdir / "careful")
    assert awaited is not None and awaited.execution.status == "completed", awaited
    assert awaited.execution.output == "assigned: True"
    assert [w.ms for w in awaited.waits] == [500]  # the timeout's back-off, in virtual time
    assert code == 0 and awaited.gate.outcome == "pass", awaited.gate
    module = importlib.import_module("async_bot.agent")
    assert _same_run(awaited, _in_process("lost-create-response", module.careful)) == {}

    code, plain = run_trusted("lost-create-response", "async_bot.agent:plain",
                              workdir / "plain")
    assert plain is not None and plain.execution.output == "customer: True"
    assert [w.ms for w in plain.waits] == [250]
    assert _same_run(plain, _in_process("lost-create-response", module.plain)) == {}


def test_TA11_a_name_the_public_task_lacks_is_a_key_error() -> None:
    task = parsed(resolve_scenario("lost-create-response")).task.public()
    assert task["customer_id"] == task.customer_id
    with pytest.raises(KeyError):
        task["capabilities"]
