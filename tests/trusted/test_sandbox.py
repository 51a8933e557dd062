"""The sandbox of a trusted child (``--sabot-sandbox``, SPEC.md I118) and what the harness
does to its own processes (``trusted/harden.py``): the child's view in bubblewrap, its model
calls over the pipe, the refusals where the machine cannot provide it, and the parent's
/proc closed to a process of its user that is not root."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hostile import NOBODY, as_user_prefix, sandbox_refusal, user_dir
from trusted_helpers import user_package

from pytest_sabot.trusted import Start, Supervisor, Unreadable, child_environment
from pytest_sabot.trusted.sandbox import (
    Sandbox,
    checkout_extras,
    evidence,
    model_engine,
    unavailable,
)

REPO = Path(__file__).resolve().parents[2]
@pytest.fixture
def sandbox_here() -> None:
    """Skips where a sandbox cannot start (bwrap missing, or namespaces refused)."""
    refusal = sandbox_refusal()
    if refusal is not None:
        pytest.skip(f"--sabot-sandbox is refused here: {refusal}")


class Desk:
    def call_tool(self, name: str, arguments: dict[str, Any] | Unreadable) -> Any:
        return {"echo": name}

    def sleep(self, ms: int) -> None:
        return None


# A child that reports what it sees from inside, through its one door (the output).
LOOKER = """
    import json, os, socket, sys

    def _try(fn):
        try:
            return fn()
        except Exception as exc:
            return type(exc).__name__

    def run(context):
        view = context.view
        report = {
            "pids": sorted(p for p in os.listdir("/proc") if p.isdigit()),
            "ppid": os.getppid(),
            "cwd": os.getcwd(), "cwd_entries": os.listdir("."),
            "hidden": _try(lambda: os.listdir(view["hidden"])),
            "hidden_file": _try(lambda: open(view["hidden_file"]).read()),
            "engine": _try(lambda: __import__("pytest_sabot.sim.engine").__name__),
            "anchors": _try(lambda: open(view["anchors"]).read()[:40]),
            "checkout": _try(lambda: {
                name: (len(os.listdir(path)) if os.path.isdir(path) else os.path.getsize(path))
                for name in os.listdir(view["checkout"])
                for path in [os.path.join(view["checkout"], name)]}),
            "write_code": _try(lambda: open(os.path.join(view["code"], "x.txt"), "w")),
            "connect": _try(lambda: socket.create_connection(
                ("127.0.0.1", view["port"]), timeout=2).close() or "connected"),
            "tmp": _try(lambda: os.listdir("/tmp")),
            "run": _try(lambda: os.listdir("/run")),
            "uid": os.getuid(),
        }
        return json.dumps(report)
"""


@pytest.mark.slow
def test_I118_the_sandboxed_child_sees_no_network_no_parent_and_no_hidden_files(
        workdir: Path, sandbox_here: None) -> None:
    user_package(workdir, "looker", LOOKER)
    secret_dir = workdir / "evidence"
    secret_dir.mkdir()
    (secret_dir / "events.jsonl.partial").write_text('{"kind": "injection"}\n')
    (workdir / "spend-ledger.json").write_text('{"spent_usd": 1.0}')
    listener = socket.create_server(("127.0.0.1", 0))  # a port the host listens on
    try:
        sandbox = Sandbox(hidden=(secret_dir, workdir / "spend-ledger.json", model_engine(),
                                  *checkout_extras([workdir])))
        with Supervisor("looker.agent:run", log_path=workdir / "logs" / "a.log",
                        timeout_s=60, sandbox=sandbox) as supervisor:
            supervisor.load()
            outcome = supervisor.run(Start(view={
                "hidden": str(secret_dir), "hidden_file": str(workdir / "spend-ledger.json"),
                "code": str(workdir), "port": listener.getsockname()[1],
                "anchors": str(REPO / "cells" / "anchors-wave3.yaml"),
                "checkout": str(REPO)}), Desk())
    finally:
        listener.close()
    assert outcome.finished is not None, outcome.report
    seen = json.loads(outcome.finished.output)
    assert seen["pids"] == ["1"] and seen["ppid"] == 0  # alone in its PID namespace
    assert (seen["cwd"], seen["cwd_entries"]) == ("/sandbox", [])
    assert seen["hidden"] == []  # an empty directory in its view
    assert seen["hidden_file"] in ("", "PermissionError")  # never the ledger's content
    assert seen["engine"] in ("ModuleNotFoundError", "ImportError")  # no embedded model (I164)
    assert seen["anchors"] in ("", "FileNotFoundError", "PermissionError")  # no planted value
    # Of the checkout it imports the package from, the package and what runs it: every
    # other entry is empty in its view (a folder with nothing in it, a file of no bytes).
    shown = {name for name, size in seen["checkout"].items() if size}
    assert "pytest_sabot" in shown
    assert shown <= {"pytest_sabot", ".git", *(
        p.name for p in REPO.iterdir() if p.name not in {e.name for e in checkout_extras()})}
    assert not shown & {"tests", "cells", "tasks", "mappings", "docs", "SPEC.md"}
    assert seen["write_code"] in ("OSError", "PermissionError")  # its code is read-only
    assert seen["connect"] in ("ConnectionRefusedError", "OSError")  # no network
    # A fresh /tmp: only the way down to its own code, when that sits under the host's /tmp.
    way = [workdir.parts[2]] if workdir.parts[1] == "tmp" else []
    assert seen["tmp"] == way and seen["run"] == "FileNotFoundError"
    assert (secret_dir / "events.jsonl.partial").read_text()  # untouched on the host


def test_I118_the_evidence_hidden_from_a_sandboxed_child(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "mypkg").mkdir(parents=True)
    (project / "reports" / "wave-3" / "cells").mkdir(parents=True)
    (project / "reports" / "wave3-local-agent").mkdir()
    tasks = tmp_path / "standard" / "tasks"
    # The default layout: the ledger's directory (reports/) holds no code: all of it hidden.
    hidden = evidence(project / "reports" / "wave3-local-agent", project / "reports", [tasks],
                      [project])
    assert set(hidden) - set(checkout_extras()) == {
        tasks, project / "reports" / "wave3-local-agent", project / "reports", model_engine()}
    # An output beside the agent's package: only what sessions wrote there is hidden.
    (project / "spend-ledger.json").write_text("{}")
    (project / "history.sqlite").write_text("")
    (project / "earlier").mkdir()
    (project / "earlier" / "results.json").write_text("{}")
    hidden = evidence(project / "out", project, [tasks], [project])
    assert set(hidden) - set(checkout_extras()) == {
        tasks, project / "out", project / "spend-ledger.json", project / "history.sqlite",
        project / "earlier", model_engine()}
    arguments = Sandbox(hidden=(tasks, project / "out")).arguments(
        child_environment(extra_path=(str(project),)))
    assert "--unshare-all" in arguments and "--disable-userns" in arguments
    assert ["--ro-bind", str(project), str(project)] == arguments[
        arguments.index(str(project)) - 1: arguments.index(str(project)) + 2]


def test_I118_the_standards_matrices_and_mappings_are_hidden_with_its_tasks(
    tmp_path: Path,
) -> None:
    """The anchors (cells/anchors-*.yaml) name every planted value, and the mappings say
    what scores: out of view with the tasks, for the shipped standard and a --sabot-root."""
    root = tmp_path / "my-root"
    for part in ("tasks", "cells", "mappings"):
        (root / part).mkdir(parents=True)
    (root / "cells" / "anchors-wave3.yaml").write_text("cells: []\n")
    hidden = evidence(tmp_path / "out", tmp_path / "ledger", [root / "tasks"], [])
    assert {root / "tasks", root / "cells", root / "mappings"} <= set(hidden)


def test_I118_a_checkout_shows_the_child_its_package_its_interpreter_and_its_own_code(
) -> None:
    """The child imports pytest-sabot from the checkout, so the checkout is in its view: of
    it, the child sees the package, the interpreter's folder and its own module, and not
    the tests and docs that quote planted values."""
    hidden = {p.name for p in checkout_extras()}
    assert {"tests", "cells", "tasks", "mappings", "docs", "SPEC.md", "examples"} <= hidden
    assert "pytest_sabot" not in hidden and ".git" not in hidden  # .git: git_dirs()
    venv = Path(sys.prefix)
    if REPO in venv.parents:  # a virtualenv inside the checkout runs the child
        assert venv.relative_to(REPO).parts[0] not in hidden
    assert "examples" not in {p.name for p in checkout_extras(own=["examples"])}
    assert "examples" not in {p.name for p in checkout_extras([REPO / "examples" / "x"])}


def test_I118_a_checkout_beside_the_output_is_no_record_of_a_session(tmp_path: Path) -> None:
    """A ledger's directory holding the checkout of the standard (cells/ of matrices) and
    the child's code: the checkout is not taken for a session's output and hidden whole."""
    checkout = tmp_path / "checkout"
    (checkout / "cells").mkdir(parents=True)
    (checkout / "cells" / "wave1.yaml").write_text("wave: 1\n")
    run = tmp_path / "run1"
    (run / "cells" / "c1").mkdir(parents=True)
    (run / "cells" / "c1" / "events.jsonl").write_text("")
    hidden = evidence(tmp_path / "out", tmp_path, [], [tmp_path / "agent"])
    assert run in hidden and checkout not in hidden


def test_I118_a_repository_holding_the_tasks_or_the_code_hides_its_git_history(
    tmp_path: Path,
) -> None:
    """Every task file is in the history of the repository it was committed to: the .git
    of a repository holding the standard's tasks or the child's code is hidden with them."""
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    (checkout / "tasks").mkdir()
    agent = tmp_path / "agent"
    (agent / "src" / "mypkg").mkdir(parents=True)
    (agent / ".git").write_text("gitdir: /elsewhere\n")  # a worktree's .git is a file
    root = tmp_path / "my-root" / "tasks"
    hidden = evidence(tmp_path / "out", tmp_path / "ledger",
                      [root, checkout / "tasks"], [checkout, agent / "src"])
    assert {checkout / ".git", agent / ".git", root, checkout / "tasks"} <= set(hidden)
    arguments = Sandbox(hidden=hidden).arguments(
        child_environment(extra_path=(str(checkout), str(agent / "src"))))
    at = arguments.index(str(checkout / ".git"))
    assert arguments[at - 1] == "--tmpfs"


def _session(cwd: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), str(REPO)])}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--sabot-wave=3", "--sabot-task=T1", "--sabot-seed=11", "-k", "baseline",
         f"--sabot-out={cwd / 'out'}", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
def test_I118_the_sandbox_is_refused_before_anything_runs_where_bwrap_is_missing(
        workdir: Path) -> None:
    user_package(workdir, "plain", "def run(ctx):\n    return 'x'\n")
    empty = workdir / "bin"
    empty.mkdir()
    done = _session(workdir, "--sabot-agent=plain.agent:run", "--trust-local-agent",
                    "--sabot-sandbox", path=str(empty))
    text = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, text
    assert "--sabot-sandbox: bubblewrap (bwrap) is not installed" in text
    assert "nothing was run" in text and "Traceback" not in text
    assert not (workdir / "out").exists()


@pytest.mark.slow
def test_I118_the_sandbox_is_refused_where_namespaces_are_refused(workdir: Path) -> None:
    user_package(workdir, "plain", "def run(ctx):\n    return 'x'\n")
    fake = workdir / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text(textwrap.dedent("""\
        #!/bin/sh
        echo "bwrap: setting up uid map: Permission denied" >&2
        exit 1
    """))
    (fake / "bwrap").chmod(0o755)
    done = _session(workdir, "--sabot-agent=plain.agent:run", "--trust-local-agent",
                    "--sabot-sandbox", path=str(fake))
    text = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, text
    assert "bubblewrap could not start a sandbox here" in text
    assert "setting up uid map: Permission denied" in text
    assert not (workdir / "out").exists()


@pytest.mark.slow
def test_I118_the_sandbox_without_an_agent_is_a_usage_error(workdir: Path) -> None:
    done = _session(workdir, "--sabot-sandbox")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "--sabot-sandbox sandboxes the child of --sabot-agent" in done.stdout + done.stderr


def test_I118_unavailable_says_nothing_where_the_sandbox_starts(sandbox_here: None) -> None:
    assert unavailable(Sandbox(), child_environment()) is None


# --------------------------------------------------------------------------- harden


HARDENED = """
import json, os, sys, time
from pytest_sabot.trusted.harden import harden, is_dumpable
done = harden()
print(json.dumps({**done, "dumpable": is_dumpable()}), flush=True)
sys.stdin.readline()
"""


@pytest.mark.slow
def test_I118_a_hardened_process_closes_its_proc_to_its_user_and_hides_its_arguments(
) -> None:
    """The parent of a trusted child, or an MCP server: run as a user who is not root, its
    /proc/<pid>/environ, mem, fd and cwd refuse that user's other processes, and its
    command line no longer shows its arguments."""
    prefix = [] if os.getuid() != 0 else as_user_prefix(NOBODY)
    if prefix is None:
        pytest.skip("running as another user needs bwrap and setpriv here (as root)")
    with user_dir(NOBODY) as where:
        env = {**os.environ, "PYTHONPATH": str(REPO), "SECRET_IN_ENV": "canary-env"}
        looker = [*prefix, sys.executable, "-c", textwrap.dedent("""
            import json, os, subprocess, sys
            proc = subprocess.Popen([sys.executable, "-c", sys.argv[1], "--sabot-out=/x/y"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            state = json.loads(proc.stdout.readline())
            seen = {}
            for what in ("environ", "mem", "cwd", "fd", "cmdline"):
                path = f"/proc/{proc.pid}/{what}"
                try:
                    seen[what] = (os.readlink(path) if what == "cwd" else os.listdir(path)
                                  if what == "fd" else open(path, "rb").read().decode(
                                      errors="replace"))
                except OSError as exc:
                    seen[what] = type(exc).__name__
            proc.communicate("\\n")
            print(json.dumps({"state": state, "seen": seen}))
        """), HARDENED]
        done = subprocess.run(looker, env=env, cwd=where, capture_output=True, text=True,
                              timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["state"] == {"undumpable": True, "command_line_hidden": True,
                               "dumpable": False}
    seen = report["seen"]
    assert [seen[w] for w in ("environ", "mem", "cwd", "fd")] == ["PermissionError"] * 4
    assert "--sabot-out" not in seen["cmdline"] and "pytest-sabot" in seen["cmdline"]
