"""The supervisor on its own, with no lab (docs/TRUSTED_AGENTS.md, rules TA1, TA3, TA4 and
TA7): the typed protocol, the plain binding with a tool catalog, a tool call and a model
endpoint, the environment allow-list, a protocol breach, a child that ignores SIGTERM and
what a child leaves behind in its process group."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from trusted_helpers import user_package

from pytest_sabot.trusted import (
    ModelEndpoint,
    Refusal,
    Start,
    Supervisor,
    ToolSpec,
    Unreadable,
    child_environment,
    protocol_schema,
)
from pytest_sabot.trusted.protocol import (
    Failed,
    Finished,
    Load,
    Loaded,
    ProtocolError,
    Refused,
    Sleep,
    ToolCall,
    ToolResult,
    decode_to_child,
    decode_to_parent,
    encode,
)


class Desk:
    """Handlers a caller of the supervisor supplies: a tiny key-value tool and a clock."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.clock_ms = 0

    def call_tool(self, name: str, arguments: dict[str, Any] | Unreadable) -> Any:
        self.calls.append((name, arguments))
        if name == "forbidden":
            raise Refusal("limit", "no budget left")
        return {"echo": arguments if isinstance(arguments, dict) else repr(arguments)}

    def sleep(self, ms: int) -> None:
        self.clock_ms += ms


def _supervisor(root: Path, target: str, **options: Any) -> Supervisor:
    options.setdefault("timeout_s", 60.0)
    return Supervisor(target, log_path=root / "logs" / "agent.log", cwd=root, **options)


def test_TA7_the_protocol_is_typed_both_ways_and_refuses_a_foreign_line() -> None:
    for message in (Load(target="a.b:c"), ToolResult(id=3, result={"x": [1]}),
                    Refused(id=2, reason="deadline", message="over")):
        assert decode_to_child(encode(message)) == message
    for reply in (Loaded(target="a.b:c", is_async=True), ToolCall(id=1, name="t",
                  arguments={"k": 1}), Sleep(id=2, ms=5), Finished(output="done"),
                  Failed(error_type="ValueError", message="m")):
        assert decode_to_parent(encode(reply)) == reply
    with pytest.raises(ProtocolError, match="not a protocol message"):
        decode_to_parent(b'{"type": "shell", "command": "rm"}\n')
    with pytest.raises(ProtocolError):
        decode_to_parent(encode(Load(target="a.b:c")))  # a parent's message from the child
    with pytest.raises(ProtocolError):
        decode_to_parent(b'{"type": "sleep", "id": 1, "ms": -1}\n')
    schema = protocol_schema()
    assert set(schema) == {"version", "to_child", "to_parent"}
    kinds = {name for name in schema["to_parent"]["discriminator"]["mapping"]}
    assert kinds == {"loaded", "load_failed", "tool_call", "sleep", "finished", "failed"}


def test_TA7_the_plain_binding_hands_over_a_catalog_call_tool_and_model_endpoints(
        tmp_path: Path) -> None:
    user_package(tmp_path, "generic_bot", """
        import json
        from pytest_sabot.trusted import Refusal

        class Odd:
            def __repr__(self):
                return "Odd()"

        def run(context):
            endpoint = context.model("worker")
            answer = context.call_tool("lookup", {"key": "k1"})
            odd = context.call_tool("lookup", {"key": Odd()})
            context.sleep(250)
            try:
                context.call_tool("forbidden", {})
            except Refusal as refusal:
                refused = [refusal.reason, refusal.message]
            return json.dumps({"tools": [t.name for t in context.tools], "view": context.view,
                               "endpoint": [endpoint.base_url, endpoint.model],
                               "answer": answer, "odd": odd, "refused": refused})
    """)
    desk = Desk()
    start = Start(view={"task": "look k1 up"},
                  tools=[ToolSpec(name="lookup", parameters={"type": "object"}),
                         ToolSpec(name="forbidden")],
                  models=[ModelEndpoint(agent="worker", base_url="http://127.0.0.1:9/r1/worker/v1",
                                        model="sabot-embedded", api_key="per-run-token")])
    with _supervisor(tmp_path, "generic_bot.agent:run") as supervisor:
        assert supervisor.load().is_async is False
        outcome = supervisor.run(start, desk)
    assert outcome.finished is not None and outcome.report.ended == "finished"
    seen = json.loads(outcome.finished.output)
    assert seen == {"tools": ["lookup", "forbidden"], "view": {"task": "look k1 up"},
                    "endpoint": ["http://127.0.0.1:9/r1/worker/v1", "sabot-embedded"],
                    "answer": {"echo": {"key": "k1"}}, "odd": {"echo": "{'key': Odd()}"},
                    "refused": ["limit", "no budget left"]}
    assert [name for name, _ in desk.calls] == ["lookup", "lookup", "forbidden"]
    assert isinstance(desk.calls[1][1], Unreadable) and desk.clock_ms == 250
    assert outcome.report.requests == 4 and outcome.report.log_file == "agent.log"


def test_TA1_the_child_environment_is_an_allow_list() -> None:
    source = {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "OPENAI_API_KEY": "sk-secret",
              "SABOT_GATEWAY_SECRET": "s", "PYTEST_CURRENT_TEST": "t.py::x (call)",
              "MY_AGENT_SETTING": "on", "PYTHONPATH": "/mine"}
    env = child_environment(source=source)
    home = str(Path(__file__).resolve().parents[2])
    assert env == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "PYTHONUNBUFFERED": "1",
                   "PYTHONPATH": f"{home}:/mine"}
    assert child_environment(["MY_AGENT_SETTING", "ABSENT"], source)["MY_AGENT_SETTING"] == "on"


def test_TA7_a_child_that_breaks_the_protocol_is_stopped_and_recorded(tmp_path: Path) -> None:
    user_package(tmp_path, "rude_bot", """
        import os, sys, time

        def run(context):
            fd = int(sys.argv[sys.argv.index("--out") + 1])
            os.write(fd, b'{"type": "shell", "command": "reboot"}\\n')
            time.sleep(600)
    """)
    with _supervisor(tmp_path, "rude_bot.agent:run") as supervisor:
        supervisor.load()
        outcome = supervisor.run(Start(), Desk())
    report = outcome.report
    assert report.ended == "protocol_error" and report.signal == "SIGKILL"
    assert "not a protocol message" in report.detail and outcome.finished is None


def test_TA3_a_child_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    user_package(tmp_path, "deaf_bot", """
        import signal, time

        def run(context):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            context.call_tool("lookup", {"key": "k"})
            while True:
                time.sleep(0.05)
    """)
    desk = Desk()
    with _supervisor(tmp_path, "deaf_bot.agent:run", timeout_s=0.5, grace_s=0.5) as supervisor:
        supervisor.load()
        outcome = supervisor.run(Start(), desk)
    report = outcome.report
    assert (report.ended, report.signal, report.requests) == ("stopped_at_deadline",
                                                              "SIGKILL", 1)


def _gone(pid: int) -> bool:
    """True when no process has this pid, or only its zombie is left."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_TA4_what_the_child_leaves_running_in_its_group_is_killed(tmp_path: Path) -> None:
    user_package(tmp_path, "leaky_bot", """
        import subprocess
        from pathlib import Path

        def run(context):
            helper = subprocess.Popen(["sleep", "300"])
            Path("helper.pid").write_text(str(helper.pid))
            return "left a helper behind"
    """)
    with _supervisor(tmp_path, "leaky_bot.agent:run") as supervisor:
        supervisor.load()
        outcome = supervisor.run(Start(), Desk())
    assert outcome.finished is not None and outcome.finished.output == "left a helper behind"
    helper = int((tmp_path / "helper.pid").read_text())
    for _ in range(200):
        if _gone(helper):
            break
        time.sleep(0.02)
    assert _gone(helper)


def test_TA7_the_supervisor_imports_nothing_of_the_lab() -> None:
    probe = ("import sys, pytest_sabot.trusted, pytest_sabot.trusted.child\n"
             "print(sorted(m for m in sys.modules if m.startswith('pytest_sabot.lab')"
             " or m.split('.')[0] in ('mcp', 'httpx', 'openai')))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.strip() == "[]"
