"""Shared pieces of the inspector's tests: recorded runs under one output root (made once
per session, shared by the xdist workers), a copy of that root with its own history per
module, and the real server (uvicorn, on a free loopback port) in a thread."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from filelock import FileLock

from pytest_sabot.commands.serve import listening_socket
from pytest_sabot.history import index_output
from pytest_sabot.web import ServeConfig, create_app

# The documented small slice (docs/USAGE.md): one framework, one task, one seed, the
# baseline and two operators (O6 is missed under sim:realistic): 6 cells, two rows.
SLICE = ["--sabot-wave=1", "--sabot-framework=langgraph", "--sabot-task=T1",
         "--sabot-seed=11", "--sabot-operator=baseline,O3,O6"]
RUNS = {
    "slice-realistic": [*SLICE, "--sabot-model=sim:realistic"],
    "slice-vigilant": [*SLICE, "--sabot-model=sim:vigilant"],
}
LAB_RUN = "lab-naive"


def _run(command: list[str], cwd: Path, history: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "SABOT_HISTORY": str(history),
                               "SABOT_JUDGE": "sim"})
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]


def recorded_root(base: Path) -> Path:
    """``base/reports``: two keyless slices (sim:realistic, sim:vigilant) through the plugin
    and one lab run (lost-create-response under builtin:naive) through ``sabot lab run``,
    each recorded in ``reports/history.sqlite`` as a user's runs are."""
    root = base / "reports"
    root.mkdir(parents=True, exist_ok=True)
    history = root / "history.sqlite"
    with FileLock(str(base / "runs.lock")):
        for name, options in RUNS.items():
            if not (root / name / "results.json").is_file():
                _run([sys.executable, "-m", "pytest", *options, "-q", "-p", "no:cacheprovider",
                      "-p", "no:xdist", f"--sabot-out={root / name}"], base, history)
        if not (root / LAB_RUN / "run.json").is_file():
            _run([sys.executable, "-m", "pytest_sabot", "lab", "run", "lost-create-response",
                  "--agent", "builtin:naive", "--out", str(root / LAB_RUN)], base, history)
    return root


def own_root(source: Path, target: Path) -> Path:
    """A copy of the recorded root with a history of its own (indexed from the copies), so
    a module that launches runs changes nobody else's list."""
    root = target / "reports"
    root.mkdir(parents=True)
    for child in source.iterdir():
        if child.is_dir():
            shutil.copytree(child, root / child.name,
                            ignore=shutil.ignore_patterns("*.lock", "locks"))
    index_output(root, root / "history.sqlite")
    return root


def lab_output(root: Path, agents: dict[str, str],
               scenario_name: str = "lost-create-response") -> Path:
    """An output root holding one lab run per folder name -> builtin agent, indexed in
    its history (root/history.sqlite)."""
    from pytest_sabot.lab.controllers import resolve_agent
    from pytest_sabot.lab.engine import run_scenario
    from pytest_sabot.lab.scenario_load import load_scenario, resolve_scenario

    scenario = load_scenario(resolve_scenario(scenario_name))
    for name, agent in agents.items():
        run_scenario(scenario, resolve_agent(agent), root / name)
    index_output(root, root / "history.sqlite")
    return root


def free_socket() -> socket.socket:
    """A loopback socket on a free port, listening as ``sabot serve``'s does."""
    return listening_socket("127.0.0.1", 0)


class Server:
    """The inspector's app under uvicorn in a thread, on its own loopback port."""

    def __init__(self, root: Path, project: Path, **options: Any) -> None:
        from pytest_sabot.core.paths import standard_root

        self.sock = free_socket()
        port = self.sock.getsockname()[1]
        self.config = ServeConfig(root=root, history=root / "history.sqlite",
                                  standard=standard_root(), project=project, port=port,
                                  **options)
        self.server = uvicorn.Server(uvicorn.Config(create_app(self.config),
                                                    log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run,
                                       kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.config.port}"

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(20)
        self.sock.close()

    def client(self, *, signed_in: bool = True) -> httpx.Client:
        """An HTTP client of this server; signed in: it carries the cookie a first visit
        sets (through the real first visit, ?token=)."""
        cookies = httpx.Cookies()
        if signed_in:
            first = httpx.get(self.base + "/", params={"token": self.config.token})
            assert first.status_code == 303, first.text
            cookies = first.cookies
        return httpx.Client(base_url=self.base, timeout=30, cookies=cookies)
