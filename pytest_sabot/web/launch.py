"""Launching from the inspector: what may be launched, the argv of the ordinary command
that runs it, and the subprocesses themselves.

What a form may name is a closed list, read from the files, never a path or a command
line typed by the user:

* a keyless wave slice: a registered matrix (``cells/*.yaml``) and values each of its own
  lists holds (frameworks, configs, operators, tasks, seeds), under an embedded-model
  persona; any other model needs the server started with ``--allow-live``;
* a lab scenario: a shipped one, or a file under ``ROOT/scenarios/`` that validates, with
  a builtin controller; a ``package.module:callable`` agent needs the server started with
  ``--trust-local-agent``, and is passed the same flag the command line requires.

The run is ``python -m pytest ...`` or ``python -m pytest_sabot lab run ...`` as an argv
list (no shell ever parses it), in a new directory under the root, recording itself into
the served history ($SABOT_HISTORY) as any run does. Its output streams to the page; a
cancel stops its whole process group (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.model_spec import parse_model
from pytest_sabot.web.config import ServeConfig

Fields = Mapping[str, Sequence[str]]
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
CALLABLE = re.compile(rf"^{IDENT}(?:\.{IDENT})*:{IDENT}$")
MAX_RUNNING = 2
KILL_AFTER_S = 5.0
MAX_LINES = 20_000
SCENARIOS_DIR = "scenarios"


# What a launched command's exit code says (the four codes every command shares,
# pytest_sabot.core.exit_codes); a negative one is the signal that stopped it.
EXIT_MEANING = {
    0: "pass",
    1: "a gate: a lab rule was violated, or a threshold the run was given was not met",
    2: "a configuration, data or harness error (see the output)",
    3: "inconclusive: the run did not record its whole selection or required coverage",
}


def exit_meaning(code: int | None) -> str:
    if code is None:
        return ""
    if code < 0:
        return f"stopped by signal {-code}"
    return EXIT_MEANING.get(code, "an unexpected exit code")


class LaunchRefused(Exception):
    """A launch the server will not start, and why (shown on the page, status 400/403)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


# --------------------------------------------------------------------------- the choices


@dataclass(frozen=True)
class WaveChoice:
    """A registered matrix and the values of each of its lists."""

    name: str
    title: str
    lab: bool
    frameworks: list[str]
    configs: list[str]
    operators: list[str]  # 'baseline' first
    tasks: list[str]
    seeds: list[str]
    cells: int


def wave_choices(standard: Path) -> dict[str, WaveChoice]:
    """Every registered matrix under ``standard`` (cells/waveN.yaml, cells/<name>.yaml)."""
    from pytest_sabot.matrix.cells import available_waves, load_wave

    found: dict[str, WaveChoice] = {}
    for wave in available_waves(standard):
        try:
            spec, cells = load_wave(wave, standard)
        except SabotDataError:
            continue  # `sabot validate` names it; it is not offered
        operators = sorted({c.operator for c in cells if c.operator is not None},
                           key=lambda o: (len(o), o))
        found[str(wave)] = WaveChoice(
            name=str(wave),
            title=spec.title,
            lab=any(c.task == "T6" for c in cells),
            frameworks=sorted({str(c.framework) for c in cells}),
            configs=sorted({str(c.config) for c in cells}),
            operators=["baseline", *operators],
            tasks=sorted({str(c.task) for c in cells}),
            seeds=sorted({str(c.seed) for c in cells}, key=int),
            cells=len(cells),
        )
    return found


@dataclass(frozen=True)
class ScenarioChoice:
    name: str
    path: Path
    shipped: bool
    description: str
    problem: str | None = None  # why a file under the root is not offered


def scenario_choices(root: Path) -> dict[str, ScenarioChoice]:
    """The shipped scenarios, then each ``ROOT/scenarios/*.yaml`` (offered only when it
    validates; otherwise listed with the problem)."""
    from pytest_sabot.lab.scenario_load import SCENARIO_DIR, load_scenario, shipped_scenarios

    found: dict[str, ScenarioChoice] = {}
    for path in shipped_scenarios():
        name = path.relative_to(SCENARIO_DIR).with_suffix("").as_posix()
        try:
            description = load_scenario(path).description or ""
        except SabotDataError as exc:  # a broken shipped file is a bug; never offered
            found[name] = ScenarioChoice(name, path, True, "", str(exc))
            continue
        found[name] = ScenarioChoice(name, path, True, description)
    local = root / SCENARIOS_DIR
    if local.is_dir():
        for path in sorted(local.glob("*.yaml")):
            name = f"{SCENARIOS_DIR}/{path.name}"
            try:
                description = load_scenario(path).description or ""
            except SabotDataError as exc:
                found[name] = ScenarioChoice(name, path, False, "", str(exc))
                continue
            found[name] = ScenarioChoice(name, path.resolve(), False, description)
    return found


def controller_names() -> list[str]:
    from pytest_sabot.lab.controllers import CONTROLLERS

    return sorted(CONTROLLERS)


def personas() -> list[str]:
    from pytest_sabot.sim import PERSONAS

    return [f"sim:{p}" for p in PERSONAS]


# --------------------------------------------------------------------------- argv


def _one(fields: Fields, name: str, default: str = "") -> str:
    values = [v.strip() for v in fields.get(name, []) if v.strip()]
    if len(values) > 1:
        raise LaunchRefused(f"field {name!r}: one value expected, got {len(values)}")
    return values[0] if values else default


def _some(fields: Fields, name: str, allowed: Sequence[str]) -> list[str]:
    values = [v.strip() for v in fields.get(name, []) if v.strip()]
    unknown = [v for v in values if v not in allowed]
    if unknown:
        raise LaunchRefused(
            f"field {name!r}: {unknown[0]!r} is not one of this matrix's values "
            f"({', '.join(allowed)})"
        )
    return [v for v in allowed if v in values]  # the matrix's order, each once


def model_of(fields: Fields, config: ServeConfig) -> str:
    """The pipeline model: an embedded persona, else (with --allow-live) a parsed spec."""
    model = _one(fields, "model", "sim:realistic")
    if model in personas():
        return model
    if not config.allow_live:
        raise LaunchRefused(
            f"model {model!r}: only the embedded model's personas ({', '.join(personas())}) "
            "can be launched; a live model needs the server started with --allow-live",
            status=403,
        )
    try:
        spec = parse_model(model)
    except ValueError as exc:
        raise LaunchRefused(f"model: {exc}") from exc
    if spec.scheme not in ("openai", "local"):
        raise LaunchRefused(f"model {model!r}: a live model is openai:<model> or "
                            "local:<model>@<url>")
    return spec.text


def wave_argv(fields: Fields, choices: Mapping[str, WaveChoice], config: ServeConfig,
              out: Path, python: str = sys.executable) -> list[str]:
    """``python -m pytest --sabot-wave=W --sabot-<list>=... --sabot-out=OUT`` for a form.

    Every list value must be the matrix's own; a list left empty runs all of it."""
    wave = _one(fields, "wave")
    choice = choices.get(wave)
    if choice is None:
        raise LaunchRefused(f"field 'wave': {wave!r} is not a registered matrix "
                            f"({', '.join(choices)})")
    argv = [python, "-m", "pytest", "-p", "no:cacheprovider", "-v", f"--sabot-wave={wave}"]
    for name, flag, allowed in (
        ("framework", "--sabot-framework", choice.frameworks),
        ("config", "--sabot-config", choice.configs),
        ("operator", "--sabot-operator", choice.operators),
        ("task", "--sabot-task", choice.tasks),
        ("seed", "--sabot-seed", choice.seeds),
    ):
        picked = _some(fields, name, allowed)
        if picked and len(picked) < len(allowed):
            argv.append(f"{flag}={','.join(picked)}")
    model = model_of(fields, config)
    argv += [f"--sabot-model={model}", f"--sabot-out={out}"]
    return argv


def lab_argv(fields: Fields, scenarios: Mapping[str, ScenarioChoice], config: ServeConfig,
             out: Path, python: str = sys.executable) -> list[str]:
    """``python -m pytest_sabot lab run SCENARIO --agent A --out OUT`` for a form."""
    name = _one(fields, "scenario")
    choice = scenarios.get(name)
    if choice is None:
        raise LaunchRefused(f"field 'scenario': {name!r} is neither a shipped scenario nor "
                            f"a file under {SCENARIOS_DIR}/ of the root")
    if choice.problem is not None:
        raise LaunchRefused(f"scenario {name}: {choice.problem}")
    agent = _one(fields, "agent", "builtin:naive")
    argv = [python, "-m", "pytest_sabot", "lab", "run", str(choice.path) if not choice.shipped
            else name, "--agent", agent, "--out", str(out)]
    if agent in controller_names():
        return argv
    if not CALLABLE.match(agent):
        raise LaunchRefused(f"field 'agent': {agent!r} is neither a builtin controller "
                            f"({', '.join(controller_names())}) nor package.module:callable")
    if not config.trust_local_agent:
        raise LaunchRefused(
            f"agent {agent!r}: your own callable runs your code; it can be launched only "
            "when the server was started with --trust-local-agent", status=403)
    return [*argv, "--trust-local-agent"]


# --------------------------------------------------------------------------- the processes


@dataclass
class Launch:
    """One launched run: its command, its output so far, how it ended."""

    id: str
    kind: str  # 'wave' or 'lab'
    argv: list[str]
    out_dir: Path
    started: float
    lines: list[str] = field(default_factory=list)
    status: str = "starting"  # running, finished, cancelled, failed to start
    exit_code: int | None = None
    run_id: str | None = None
    note: str = ""
    process: asyncio.subprocess.Process | None = field(default=None, repr=False)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition, repr=False)

    @property
    def command(self) -> str:
        """The exact command, as a shell would spell it (it is run as an argv list)."""
        return shlex.join(self.argv)

    @property
    def meaning(self) -> str:
        return exit_meaning(self.exit_code)

    @property
    def done(self) -> bool:
        return self.status in ("finished", "cancelled", "failed to start")

    @property
    def settled(self) -> bool:
        """Its end is final: the exit code and the history's run are known (a cancelled
        run is done at once but settles only when its process has exited and been
        indexed), or it never started."""
        return self.status == "failed to start" or (self.done and self.exit_code is not None)


class Launches:
    """The server's launched runs, by id (kept for the server's life)."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.all: dict[str, Launch] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def running(self) -> int:
        return sum(1 for x in self.all.values() if not x.done)

    def new_out_dir(self, kind: str) -> Path:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        for n in range(1, 1000):
            out = self.config.root / f"serve-{kind}-{stamp}-{n}"
            if not out.exists():
                return out
        raise LaunchRefused("no free output directory name")  # pragma: no cover

    async def start(self, kind: str, argv: list[str], out: Path) -> Launch:
        if self.config.read_only:
            raise LaunchRefused("this server is read-only (--read-only): nothing can be "
                                "launched", status=403)
        if self.running() >= MAX_RUNNING:
            raise LaunchRefused(f"{MAX_RUNNING} launched runs are still running; wait for "
                                "one to end or cancel it", status=429)
        launch = Launch(id=out.name, kind=kind, argv=argv, out_dir=out, started=time.time())
        self.all[launch.id] = launch
        env = {**os.environ, "SABOT_HISTORY": str(self.config.history.resolve()),
               "PYTHONUNBUFFERED": "1"}
        try:
            launch.process = await asyncio.create_subprocess_exec(
                *argv, cwd=self.config.project, env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            launch.status, launch.note = "failed to start", str(exc)
            return launch
        launch.status = "running"
        task = asyncio.create_task(self._follow(launch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return launch

    async def _follow(self, launch: Launch) -> None:
        assert launch.process is not None and launch.process.stdout is not None
        async for raw in launch.process.stdout:
            async with launch.changed:
                if len(launch.lines) < MAX_LINES:
                    launch.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                launch.changed.notify_all()
        code = await launch.process.wait()
        run_id = await asyncio.to_thread(self._recorded_run, launch.out_dir)
        async with launch.changed:
            launch.exit_code = code
            launch.run_id = run_id
            if launch.status != "cancelled":
                launch.status = "finished"
            launch.changed.notify_all()

    def _recorded_run(self, out: Path) -> str | None:
        """The history's run written to ``out``; a run that did not record itself there
        (it was cancelled after writing records) is indexed, so nothing on disk is left
        out of the list."""
        from pytest_sabot.history import HistoryError, index_output, list_runs

        history = self.config.history

        def find() -> str | None:
            if not history.exists():
                return None
            target = str(out.resolve())
            matches = [r for r in list_runs(history) if str(Path(r.out_dir).resolve()) == target]
            return matches[0].run_id if matches else None

        try:
            found = find()
            if found is None and out.is_dir() and any(out.iterdir()):
                index_output(out, history)
                found = find()
            return found
        except (HistoryError, SabotDataError, OSError):
            return None

    async def cancel(self, launch: Launch) -> None:
        process = launch.process
        if launch.done or process is None or process.returncode is not None:
            return
        async with launch.changed:
            launch.status = "cancelled"
            launch.note = "cancelled from the page: SIGTERM to its process group"
            launch.changed.notify_all()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), KILL_AFTER_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            launch.note += "; SIGKILL after 5 s"

    async def close(self) -> None:
        """Stop every run still going (the server is shutting down)."""
        for launch in list(self.all.values()):
            await self.cancel(launch)
