"""Real inputs for the history's tests, made once per test session (and shared by every
xdist worker: the first to ask makes them under a file lock, the others read them).

Under one output root:

    wave-1/      two keyless sessions of the same slice (wave 1, LangGraph, T1, seed 11,
                 sim:realistic) run through the plugin in a fresh interpreter, so
                 sessions/ holds two manifests and results.json describes the second;
                 ``first-results.json`` beside the root keeps the first session's
                 results as it wrote them (what the controller would have recorded)
    vigilant/    the same slice under sim:vigilant (acts on every finding)
    credulous/   the same slice under sim:credulous (approves everything)
    elsewhere/   the credulous slice again, scored from a copy of the standard's data
                 with one line added to mappings/rules.yaml: another registration hash
    lab/         two lab runs of helpdesk/lost-create-response, builtin:naive then
                 builtin:resilient (the first set aside as run.prev-1.json)
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import pytest_sabot
from pytest_sabot.core.paths import standard_root
from pytest_sabot.lab.controllers import resolve_agent
from pytest_sabot.lab.engine import run_scenario
from pytest_sabot.lab.scenario_load import load_scenario, resolve_scenario

SLICE = ["--sabot-wave=1", "--sabot-framework=langgraph", "--sabot-task=T1",
         "--sabot-seed=11"]
SESSION_TIMEOUT_S = 600
LAB_SCENARIO = "helpdesk/lost-create-response"


@dataclass(frozen=True)
class Inputs:
    root: Path
    wave1: Path
    vigilant: Path
    credulous: Path
    elsewhere: Path
    lab: Path
    first_results: Path  # the first wave-1 session's results.json, as it wrote it
    ids: dict[str, str]  # name -> run id: first, second, vigilant, credulous, elsewhere

    def manifest(self, name: str) -> Path:
        out = self.wave1 if name in ("first", "second") else getattr(self, name)
        return Path(out) / "sessions" / f"{self.ids[name]}.json"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "SABOT_")) and not k.endswith("_API_KEY")}
    source = str(Path(pytest_sabot.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH")) if p)
    return env


def _session(cwd: Path, out: Path, extra: list[str]) -> str:
    """Run the slice through the plugin once; the run id of the session it made."""
    before = set((out / "sessions").glob("*.json")) if (out / "sessions").is_dir() else set()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-q", f"--sabot-out={out}", *SLICE, *extra],
        cwd=cwd, env=_env(), capture_output=True, text=True, timeout=SESSION_TIMEOUT_S,
        check=False,
    )
    made = sorted(set((out / "sessions").glob("*.json")) - before)
    assert proc.returncode == 0 and len(made) == 1, (
        f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
    )
    return made[0].stem


def _other_registration(root: Path) -> Path:
    """A copy of the standard's data that differs by one comment line: same cells, tasks
    and mappings in substance, another registration hash."""
    copy = root / "standard-copy"
    source = standard_root()
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(source / folder, copy / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    rules = copy / "mappings" / "rules.yaml"
    rules.write_text(rules.read_text(encoding="utf-8")
                     + "# a second registration of the same rules\n", encoding="utf-8")
    return copy


def _build(root: Path) -> dict[str, str]:
    cwd = root / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    ids: dict[str, str] = {}
    ids["first"] = _session(cwd, root / "wave-1", [])
    shutil.copyfile(root / "wave-1" / "results.json", root / "first-results.json")
    ids["second"] = _session(cwd, root / "wave-1", [])
    ids["vigilant"] = _session(cwd, root / "vigilant", ["--sabot-model=sim:vigilant"])
    ids["credulous"] = _session(cwd, root / "credulous", ["--sabot-model=sim:credulous"])
    copy = _other_registration(root)
    ids["elsewhere"] = _session(
        cwd, root / "elsewhere", ["--sabot-model=sim:credulous", f"--sabot-root={copy}"]
    )
    scenario = load_scenario(resolve_scenario(LAB_SCENARIO))
    for agent in ("builtin:naive", "builtin:resilient"):
        run_scenario(scenario, resolve_agent(agent), root / "lab")
    return ids


def _shared_dir(config: pytest.Config, factory: pytest.TempPathFactory) -> Path:
    base = factory.getbasetemp()
    root = base.parent if hasattr(config, "workerinput") else base
    path = root / "sabot-history-inputs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def make_inputs(config: pytest.Config, factory: pytest.TempPathFactory) -> Inputs:
    """The inputs, made by the first process of the test session that asks."""
    shared = _shared_dir(config, factory)
    done = shared / "done.json"
    with (shared / "build.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not done.is_file():
                n = 1
                while (shared / f"output-{n}").exists():  # a build that failed half way
                    n += 1
                root = shared / f"output-{n}"
                ids = _build(root)
                done.write_text(json.dumps({"root": str(root), "ids": ids}), encoding="utf-8")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    saved = json.loads(done.read_text(encoding="utf-8"))
    root = Path(saved["root"])
    return Inputs(
        root=root, wave1=root / "wave-1", vigilant=root / "vigilant",
        credulous=root / "credulous", elsewhere=root / "elsewhere", lab=root / "lab",
        first_results=root / "first-results.json", ids=saved["ids"],
    )


def tree_digest(top: Path) -> dict[str, bytes]:
    """Every file under ``top`` with its bytes: to show a directory was not touched."""
    return {str(p.relative_to(top)): p.read_bytes() for p in sorted(top.rglob("*"))
            if p.is_file()}
