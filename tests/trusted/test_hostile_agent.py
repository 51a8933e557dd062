"""Issue 21, item 2 (SPEC.md I117, I118): the hostile agent, run as the pipeline of a wave
as root and as a user who is not, without and with ``--sabot-sandbox``. Each test performs
every probe of ``hostile.py`` from inside the child and compares what it found with what
docs/TRUSTED_AGENTS.md says holds there; where the probes fail, the cell is scored from
what the agent really did (its model calls), never from what it read."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hostile import (
    NOBODY,
    as_user_prefix,
    expected,
    mcp_client,
    probes_of,
    sandbox_refusal,
    session,
    user_dir,
    write_package,
)

pytestmark = pytest.mark.slow

FAULT = "hostile_bot_agent_run-default-O5-T1-s11"
BASELINE = "hostile_bot_agent_run-default-baseline-T1-s11"


def _needs_nobody() -> None:
    if os.getuid() != 0:
        return  # already a user who is not root
    if as_user_prefix() is None:
        pytest.skip("running as another user needs bwrap and setpriv here (as root)")


def _needs_sandbox() -> None:
    refusal = sandbox_refusal()
    if refusal is not None:
        pytest.skip(f"--sabot-sandbox is refused here: {refusal}")


def _cells(out: Path) -> dict[str, dict[str, Any]]:
    results = json.loads((out / "results.json").read_text())
    return {c["cell_id"]: c for c in results["cells"]}


def _events(out: Path, cell: str) -> list[dict[str, Any]]:
    text = (out / "cells" / cell / "events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _check(where: Path, done: Any, root: bool, sandboxed: bool) -> None:
    out = where / "out"
    text = done.stdout[-4000:] + done.stderr[-3000:]
    assert (out / "results.json").exists(), text
    probes = probes_of(out / "cells" / FAULT / "agent-1.log")
    assert probes["found"] == expected(root, sandboxed), (probes, text)
    cells = _cells(out)
    events = _events(out, FAULT)
    reviews = [e for e in events if e["kind"] == "review"]
    # What the parent answered it (tool results, what a handoff delivered) names no cell.
    answered = [e["text"] for e in events if e["kind"] in ("tool_result", "message")]
    assert not [t for t in answered if "hostile_bot_agent_run-default" in t or str(out) in t]
    if not probes["found"]["live_trace"]:
        # Nothing read: the agent worked, and its verdict is what its work earned.
        assert [e for e in events if e["kind"] == "model_call"], events
        assert not [e for e in reviews if "CHEAT" in e["text"]]
        assert cells[BASELINE]["status"] == "passed", cells[BASELINE]
        assert cells[FAULT]["excluded"] is None, cells[FAULT]
    else:  # as root without the sandbox: the documented hole, the cheat
        assert [e for e in reviews if "CHEAT" in e["text"]]
        assert not [e for e in events if e["kind"] == "model_call"]


def test_I118_the_hostile_agent_as_a_user_who_is_not_root_without_the_sandbox() -> None:
    _needs_nobody()
    with user_dir(NOBODY) as where:
        target = write_package(where)
        done = session(where, target, uid=NOBODY)
        _check(where, done, root=False, sandboxed=False)


def test_I118_the_hostile_agent_as_root_without_the_sandbox() -> None:
    if os.getuid() != 0:
        pytest.skip("needs root: the documented limits of a run as root")
    with user_dir(0) as where:
        target = write_package(where)
        done = session(where, target)
        _check(where, done, root=True, sandboxed=False)


def test_I118_the_hostile_agent_as_a_user_who_is_not_root_in_the_sandbox() -> None:
    _needs_nobody()
    _needs_sandbox()
    with user_dir(NOBODY) as where:
        target = write_package(where)
        done = session(where, target, "--sabot-sandbox", uid=NOBODY)
        _check(where, done, root=False, sandboxed=True)


def test_I118_the_hostile_agent_as_root_in_the_sandbox() -> None:
    if os.getuid() != 0:
        pytest.skip("needs root")
    _needs_sandbox()
    with user_dir(0) as where:
        target = write_package(where)
        done = session(where, target, "--sabot-sandbox")
        _check(where, done, root=True, sandboxed=True)


def test_I118_the_mcp_server_shows_a_client_that_is_not_root_no_descriptor() -> None:
    """The MCP door: the client started the server, so it is the server's parent and knows
    its pid; before, /proc/<pid>/fd listed the live trace. The server is non-dumpable: the
    client (not root) can list none of its descriptors, nor read its environment, memory
    or working directory, and its command line no longer shows the output directory."""
    _needs_nobody()
    with user_dir(NOBODY) as where:
        seen = mcp_client(where, uid=NOBODY)
        assert len(seen) == 1, seen  # the server process
        (server,) = seen.values()
        assert server["fds"] == "PermissionError", server
        assert (server["environ"], server["mem"], server["cwd"]) == ("PermissionError",) * 3
        assert str(where / "out") not in server["cmdline"], server
