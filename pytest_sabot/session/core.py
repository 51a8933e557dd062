"""The session object: state of one pytest session of a wave, on the controller or on an
xdist worker, and everything the plugin's hooks do."""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_sabot.core import manifest as manifest_mod
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.models.states import NotRunReason
from pytest_sabot.core.records import OutputInUse, SessionLock, now_iso
from pytest_sabot.core.trace_io import OutputUnwritable
from pytest_sabot.session import gateway as gateway_mod
from pytest_sabot.session import junit, preflight, signals, start_order
from pytest_sabot.session import secrets as secrets_mod
from pytest_sabot.session.selection import (
    Selection,
    cell_id_of,
    cell_ids_of_items,
    collect_cell_module,
    fix,
    rewrite_pasted_ids,
)
from pytest_sabot.session.settings import Settings, read_settings
from pytest_sabot.session.xdist import worker_settings

if TYPE_CHECKING:
    from pytest_sabot.gateway.server import Gateway
    from pytest_sabot.harness.run import RunSettings
    from pytest_sabot.judge.backends import JudgeBackend
    from pytest_sabot.matrix.standard import Standard
    from pytest_sabot.results import ResultsFile
    from pytest_sabot.session.boards import Boards
    from pytest_sabot.session.gates import Gate
    from pytest_sabot.session.inflight import CellPool
    from pytest_sabot.session.runner import CellRunner
    from pytest_sabot.session.shard import Shard

STATE = pytest.StashKey["SabotSession"]()
FATAL = pytest.StashKey[dict[str, str]]()
RESULT = pytest.StashKey[dict[str, Any]]()

# Deprecation warnings of these modules are quieted in a wave, with those every registered
# framework's adapter names (FrameworkAdapter.warning_modules).
BASE_WARNING_MODULES = (r"pydantic(\..*)?",)
# pytest-timeout's timer for a cell test covers both attempts of the cell and of a
# pulled-in baseline, the judge and the harness's own grace per attempt: it fires only
# when the harness itself hangs (SPEC I46).
TIMEOUT_GRACE_PER_ATTEMPT_S = 10.0
TIMEOUT_GRACE_S = 120.0


def _nothing() -> None:
    return None


def _import_framework(name: str) -> None:
    """Import a framework's pipeline (the cells in flight start a framework's cells once
    it is imported, session/inflight.py)."""
    from pytest_sabot.core.frameworks import adapter

    adapter(name).load_run()


def session_of(config: pytest.Config) -> SabotSession:
    return config.stash[STATE]


class SabotSession:
    """Per-process session state (controller or xdist worker)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.is_worker = hasattr(config, "workerinput")
        workerinput: dict[str, Any] = getattr(config, "workerinput", {})
        self.settings: Settings = worker_settings(read_settings(config), workerinput)
        self.run_id: str = workerinput.get("sabot_run_id") or manifest_mod.new_run_id()
        self.started = now_iso()
        self.std: Standard | None = None
        self.filtered: list[Cell] = []
        self.gateway: Gateway | None = None  # this process's own gateway, when it runs cells
        self.gateway_url: str | None = None
        # The connection budget the workers' gateways share (controller; gateway/slots.py).
        self.slots_dir: Path | None = None
        self.worker_spend: dict[str, dict[str, Any]] = {}  # controller: by worker id
        self.shard: Shard | None = None  # --sabot-shard, when given
        self.selection: Selection | None = None
        self.output_started = False
        self.runner: CellRunner | None = None
        self.pool: CellPool | None = None  # when several cells are in flight (inflight.py)
        self.judge_note: str | None = None
        # Seconds per cell from earlier sessions: the order cells start in (SPEC I163).
        self._start_seconds: dict[str, float] | None = None
        self.pytest_session: pytest.Session | None = None
        self.results: ResultsFile | None = None
        self.reports: dict[str, dict[str, Any]] = {}
        self.cell_reports: dict[str, pytest.TestReport] = {}  # controller: to settle (final.py)
        self.cell_nodeids: dict[str, str] = {}  # controller: each selected cell's test id
        self.reported_cells: set[str] = set()  # controller: cells any report came for
        self.events: list[dict[str, str]] = []
        self.stop_reason: NotRunReason | None = None
        self.stop_detail = ""
        self.crashes: Counter[str] = Counter()
        self.crashed_cells: dict[str, str] = {}
        self.gates: list[Gate] = []
        self.messages: list[tuple[str, bool]] = []
        self.reserve: Path | None = None
        self.results_written = False
        self.report_html: Path | None = None  # report.html, once written
        self.boards: Boards | None = None  # fixed with the selection (session/boards.py)
        self.directory_results: ResultsFile | None = None  # the directory's, when apart
        # The session's own cells under the registered rules, beside its other rules (I98).
        self.registered_reading: ResultsFile | None = None
        self.local_adapters: list[str] = []  # framework names --sabot-adapter registered
        self.out_lock: SessionLock | None = None  # held from the output's opening on
        self._restore_signals: Callable[[], None] = _nothing

    # ------------------------------------------------------------------ properties

    @property
    def standard(self) -> Standard:
        """The wave this session runs; only asked for once a wave is loaded (a session
        without a wave runs no cell and writes no results)."""
        if self.std is None:
            raise RuntimeError("pytest-sabot: no wave is loaded in this session")
        return self.std

    @property
    def wave_given(self) -> bool:
        return self.settings.wave is not None

    @property
    def out_dir(self) -> Path:
        if self.settings.out:
            return Path(self.settings.out)
        if self.std is not None and self.settings.agent:  # never among the wave's records
            return Path("reports") / str(self.std.wave.name)
        return Path("reports") / f"wave-{self.std.wave.wave if self.std else self.settings.wave}"

    @property
    def collect_only(self) -> bool:
        return bool(self.config.option.collectonly)

    @property
    def attempt_timeout(self) -> float:
        """Time limit of one attempt: --sabot-timeout, or pytest-timeout's --timeout when
        that is smaller (0 means no limit)."""
        own = self.settings.timeout
        theirs = self.pytest_timeout
        limits = [t for t in (own, theirs) if t]
        return min(limits) if limits else 0.0

    @property
    def pytest_timeout(self) -> float | None:
        """pytest-timeout's per-test timeout, when that plugin is active and one is set."""
        if not self.config.pluginmanager.hasplugin("timeout"):
            return None
        value = getattr(self.config, "_env_timeout", None)
        return float(value) if value else None

    # ------------------------------------------------------------------ configure

    def configure(self) -> None:
        config = self.config
        config.addinivalue_line(
            "markers",
            "sabot_cell(framework, config, operator, task, seed): one cell of a Sabot wave",
        )
        if not self.wave_given:
            return
        secrets_mod.register(self.settings)  # before anything runs or is written
        from pytest_sabot.core.frameworks import unloadable, warning_modules
        from pytest_sabot.core.registry import RegistryError
        from pytest_sabot.core.secrets import scrub_text

        try:  # an adapter that does not load is refused before anything runs
            self._register_adapters()
            quiet = warning_modules()
        except RegistryError as exc:
            raise pytest.UsageError(scrub_text(f"pytest-sabot: {exc}; nothing was run")) from None
        for category in ("DeprecationWarning", "PendingDeprecationWarning"):
            for module in (*quiet, *BASE_WARNING_MODULES):
                config.addinivalue_line("filterwarnings", f"ignore::{category}:{module}")
        from pytest_sabot.matrix.standard_cache import load_standard_cached

        try:  # parsed once: the controller's parse is read back by its workers
            self.std = load_standard_cached(
                str(self.settings.wave), self.settings.root, rules=self.settings.rules
            )
        except SabotDataError as exc:
            # a wave no cells folder registers is the option's mistake: named as the option
            option = (f"--sabot-wave={self.settings.wave}: "
                      if exc.field == "wave" and Path(exc.file).name == "cells" else "")
            raise pytest.UsageError(f"pytest-sabot: {option}{exc}") from None
        except RegistryError as exc:  # an adapter of the wave that does not load
            raise pytest.UsageError(scrub_text(f"pytest-sabot: {exc}; nothing was run")) from None
        except KeyError as exc:  # a rule version the rule book does not hold
            words = str(exc.args[0]) if exc.args else str(exc)
            option = f"--sabot-rules={self.settings.rules}: " if self.settings.rules else ""
            raise pytest.UsageError(f"pytest-sabot: {option}{words}") from None
        if self.settings.agent:  # the trusted agent's one row replaces the wave's rows
            from pytest_sabot.trusted.sabot import agent_wave

            try:
                from pytest_sabot.trusted.sabot import configured_row

                self.std = agent_wave(self.std, configured_row(), target=self.settings.agent)
            except SabotDataError as exc:
                raise pytest.UsageError(f"pytest-sabot: {exc}") from None
        if self.settings.sandbox:
            self._use_sandbox()
        if not self.is_worker:  # said once, at the end: an installed adapter that is broken
            self.messages += [
                (f"pytest-sabot: {problem} (wave {self.std.wave.wave} does not run {name})", True)
                for name, problem in unloadable().items()
                if name not in self.std.wave.frameworks
            ]
        self.filtered = preflight.select(self.std, self.settings.filters)
        preflight.check_frameworks(self.filtered)
        from pytest_sabot.session import shard as shard_mod

        self.shard = shard_mod.configure(config, self.std, self.filtered, not self.is_worker)
        rewrite_pasted_ids(config)
        collect_cell_module(config)
        if self.is_worker:
            self._start_gateway()
            return
        preflight.check_model(self.settings)
        preflight.check_files(self.settings)
        self.messages += [(line, True) for line in preflight.unused_options(self.settings)]
        preflight.check_downgrade(self.settings, self.std, self.filtered)
        preflight.check_hang_bound(self.settings, self.std)
        if not self.collect_only:
            preflight.check_out_dir(self.out_dir)
        if gateway_mod.distributed(config):
            # The workers run the cells, each on a gateway of its own: the controller
            # only checks the settings they will use.
            url = gateway_mod.external_url(self.settings)
            if url is not None and not self.collect_only:
                self.gateway_url = gateway_mod.open_account(
                    self.settings, url, self.out_dir, self.run_id
                )
            gateway_mod.settings_of(self.settings, self.out_dir)
            if url is None and not self.collect_only:
                self.slots_dir = gateway_mod.make_shared_budget(config, self.settings)
        else:
            self._start_gateway()
        self._check_judge()
        self._restore_signals = signals.install()

    def _start_gateway(self) -> None:
        """This process runs cells: start its own gateway (a gateway given by URL is used
        as it is). A worker's shares --sabot-max-connections with the other workers' (their
        shared budget, or a fixed share where the platform has none: SPEC I162)."""
        url = gateway_mod.external_url(self.settings)
        if url is not None:
            self.gateway_url = (
                url if self.collect_only
                else gateway_mod.open_account(self.settings, url, self.out_dir, self.run_id)
            )
            return
        workerinput: dict[str, Any] = getattr(self.config, "workerinput", {})
        settings = gateway_mod.settings_of(
            self.settings,
            self.out_dir,
            session=self.run_id,
            workdir=gateway_mod.worker_workdir(workerinput),
            share=int(workerinput.get("workercount", 1) or 1),
            slots_dir=gateway_mod.worker_slots_dir(workerinput),
        )
        self.gateway, self.gateway_url = gateway_mod.start(self.config, settings)

    def _task_dirs(self, shipped_root: Callable[[], Path]) -> list[Path]:
        """The standard's tasks, and the shipped standard's when another root is given (the
        package the child imports sits beside it)."""
        dirs = [Path(self.standard.root) / "tasks"]
        with contextlib.suppress(SabotDataError):  # an installed package without a copy
            dirs.append(shipped_root() / "tasks")
        return list(dict.fromkeys(dirs))

    def _use_sandbox(self) -> None:
        """--sabot-sandbox: the agent's children run in bubblewrap, with the standard's
        tasks, the output and the spend ledger's records out of their view; the controller
        starts one first and refuses the session where the machine cannot provide it."""
        if not self.settings.agent:
            raise pytest.UsageError(
                "pytest-sabot: --sabot-sandbox sandboxes the child of --sabot-agent; give "
                "one (the shipped frameworks run inside the harness, not in a child)"
            )
        from pytest_sabot.core.paths import shipped_root
        from pytest_sabot.trusted.sabot import use_sandbox
        from pytest_sabot.trusted.sandbox import evidence
        from pytest_sabot.trusted.supervisor import child_environment

        code = child_environment(extra_path=(os.getcwd(),)).get("PYTHONPATH", "")
        hidden = evidence(
            self.out_dir.absolute(),
            gateway_mod.ledger_dir(self.settings, self.out_dir),
            self._task_dirs(shipped_root),
            [Path(p) for p in code.split(os.pathsep) if p],
            [Path("reports").absolute(), Path(self.standard.root) / "reports"],
            own=[self.settings.agent.split(":")[0].split(".")[0]],
        )
        problem = use_sandbox(hidden, check=not self.is_worker)
        if problem is not None:
            raise pytest.UsageError(f"pytest-sabot: {problem}")

    def unconfigure(self) -> None:
        self._restore_signals()
        if self.wave_given and not self.is_worker:
            problem = secrets_mod.scrub_junit(self.config)
            if problem is not None:
                print(problem, file=sys.stderr)
        if self.out_lock is not None:
            self.out_lock.release()
        from pytest_sabot.core.frameworks import forget_local

        for name in self.local_adapters:
            forget_local(name)
        if self.settings.agent:
            from pytest_sabot.trusted.sabot import forget

            forget()

    def _register_adapters(self) -> None:
        """--sabot-adapter: local framework adapters, registered for this session only
        (every process of the session registers them, workers included); --sabot-agent:
        a trusted local agent's row, refused before anything runs without the trust flag."""
        self._register_local_adapters()
        if self.settings.agent is None:
            self._no_agent_options()
            return
        from pytest_sabot.core.frameworks import framework_names
        from pytest_sabot.trusted.agent_row import (
            default_row,
            env_refusal,
            mapping_refusal,
            row_refusal,
        )
        from pytest_sabot.trusted.sabot import refusal, register
        from pytest_sabot.trusted.target import is_target

        agent = self.settings.agent
        row = self.settings.agent_row or (default_row(agent) if is_target(agent) else None)
        mapping = Path(self.settings.agent_mapping) if self.settings.agent_mapping else None
        problem = (
            refusal(agent, self.settings.trust_local_agent)
            or (row_refusal(row, framework_names()) if row else None)
            or env_refusal(self.settings.agent_env, os.environ)
            or (mapping_refusal(mapping, str(row)) if mapping else None)
        )
        if problem is not None:
            raise pytest.UsageError(f"pytest-sabot: {problem}")
        assert row is not None
        register(agent, self.attempt_timeout, row=row,
                 mapping=None if mapping is None else mapping.absolute(),
                 pass_env=tuple(self.settings.agent_env))
        # Every process of the session that could be the agent's parent (or show the
        # session's arguments) hides its /proc details from it (trusted/harden.py).
        from pytest_sabot.trusted.harden import harden

        harden()

    def _no_agent_options(self) -> None:
        """--sabot-agent-row, -mapping and -env describe --sabot-agent's row: refused alone."""
        given = [flag for flag, value in (
            ("--sabot-agent-row", self.settings.agent_row),
            ("--sabot-agent-mapping", self.settings.agent_mapping),
            ("--sabot-agent-env", self.settings.agent_env),
        ) if value]
        if given:
            raise pytest.UsageError(
                f"pytest-sabot: {given[0]} describes the row of --sabot-agent; give one "
                "(package.module:callable, with --trust-local-agent)"
            )

    def _register_local_adapters(self) -> None:
        """--sabot-adapter's adapters (before the agent's row, whose name must differ)."""
        if not self.settings.adapters:
            return
        from pytest_sabot.core.frameworks import register_local
        from pytest_sabot.core.registry import RegistryError
        from pytest_sabot.core.secrets import scrub_text

        for target in self.settings.adapters:
            try:
                declared = register_local(target)
            except RegistryError as exc:  # says what was expected itself
                raise pytest.UsageError(
                    scrub_text(f"pytest-sabot: --sabot-adapter={target}: {exc}")
                ) from None
            except Exception as exc:  # its module's own import: whatever it raises is named
                raise pytest.UsageError(scrub_text(
                    f"pytest-sabot: --sabot-adapter={target}: {type(exc).__name__}: {exc} "
                    "(expected module:factory, a factory returning a FrameworkAdapter)"
                )) from None
            self.local_adapters.append(declared.name)

    def _make_judge(self) -> tuple[JudgeBackend, str | None]:
        from pytest_sabot.judge import JudgeBackendError, make_backend

        spec = self.settings.judge
        try:
            backend, note = make_backend(
                spec,
                pipeline_model=self.settings.model,
                gateway_url=self.gateway_url or (
                    gateway_mod.WORKER_GATEWAYS_URL if gateway_mod.distributed(self.config)
                    else None
                ),
                allow_same_lineage=self.settings.judge_same_lineage,
            )
            backend.assert_sandboxed()
        except JudgeBackendError as exc:
            raise pytest.UsageError(f"pytest-sabot: judge {spec!r} refused: {exc}") from None
        return backend, note

    def _check_judge(self) -> None:
        if self.settings.judge != "none":
            _backend, self.judge_note = self._make_judge()

    # ------------------------------------------------------------------ collection

    def parametrize(self, metafunc: pytest.Metafunc) -> None:
        if self.std is None:
            metafunc.parametrize("sabot_cell_id", [], ids=[])
            return
        marks: list[Any] = []
        if self.pytest_timeout:
            limit = self.attempt_timeout
            budget = 4 * (limit + TIMEOUT_GRACE_PER_ATTEMPT_S) + TIMEOUT_GRACE_S
            marks.append(pytest.mark.timeout(math.ceil(budget), method="signal"))
        params = [
            pytest.param(
                cell.id,
                id=cell.id,
                marks=[
                    pytest.mark.sabot_cell(
                        framework=cell.framework,
                        config=cell.config,
                        operator=cell.operator or "baseline",
                        task=cell.task,
                        seed=cell.seed,
                    ),
                    *marks,
                ],
            )
            for cell in start_order.longest_first(self.filtered, self.start_seconds())
        ]
        metafunc.parametrize("sabot_cell_id", params)

    def start_table(self) -> str:
        """The name of this session's table of cell times in pytest's cache (SPEC I163)."""
        assert self.std is not None, "a wave is loaded"
        return start_order.table_name(self.std.wave.wave, self.settings.model.text)

    def start_seconds(self) -> dict[str, float]:
        """How long each cell ran in earlier sessions of this wave and model (SPEC I163):
        the controller's from pytest's cache, a worker's as its controller handed them."""
        if self._start_seconds is None:
            workerinput = getattr(self.config, "workerinput", None)
            if isinstance(workerinput, dict):
                given = workerinput.get("sabot_start_seconds")
                self._start_seconds = dict(given) if isinstance(given, dict) else {}
            else:
                self._start_seconds = start_order.recorded_seconds(
                    getattr(self.config, "cache", None), self.start_table()
                )
        return self._start_seconds

    def collection_finished(self, items: Sequence[pytest.Item]) -> None:
        """A process that collected: its items are final now (unless the collection was
        interrupted: pytest reports its end even then, and a selection it never finished
        is not the user's, so nothing is opened)."""
        if self.std is None or isinstance(sys.exc_info()[1], KeyboardInterrupt):
            return
        ids = cell_ids_of_items(items)
        if not self.is_worker:
            self.cell_nodeids = {cid: i.nodeid for i in items
                                 if (cid := cell_id_of(i.nodeid)) is not None}
            self.fix_selection(ids)
        if not self.collect_only:
            self._build_runner(ids)

    def fix_selection_from_nodeids(self, nodeids: Sequence[str]) -> None:
        ids = [cid for cid in (cell_id_of(n) for n in nodeids) if cid is not None]
        self.cell_nodeids = {cid: n for n in nodeids if (cid := cell_id_of(n)) is not None}
        self.fix_selection(ids)

    def fix_selection(self, ids: Sequence[str]) -> None:
        """The selection is fixed (controller): check what depends on it and open the
        output directory, before any cell runs. No cell selected: nothing on disk."""
        if self.selection is not None or self.std is None:
            return
        filters = dict(self.settings.filters)
        if self.shard is not None:
            filters["shard"] = [str(self.shard)]
        selection = fix(self.std, ids, self.config, filters)
        self.selection = selection
        from pytest_sabot.session import boards

        self.boards = boards.plan(self.out_dir, self.std, self.run_id, selection.ids)
        if not selection.cells or self.collect_only:
            return
        preflight.check_replay_covers(self.settings, [c.id for c in selection.to_record])
        preflight.check_projection(self.settings, selection.to_record, self.out_dir)
        preflight.check_downgrade(self.settings, self.std, selection.runnable)
        with signals.deferred():  # a SIGTERM now interrupts once the output is open
            self._open_output(len(selection.to_record))

    def _open_output(self, cells: int) -> None:
        """The session's first writes: its lock on the output, the space reserve, the
        manifest (running) and results.json (pending)."""
        from pytest_sabot.session import finishing

        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.out_lock = SessionLock(self.out_dir)
            self.out_lock.acquire(self.run_id)
            # Under the lock, before the first results.json of this session is written: a
            # directory's results.json that does not read is set aside, never overwritten.
            from pytest_sabot.session.boards import set_aside_damaged

            aside = set_aside_damaged(self.out_dir, self.run_id)
            if aside is not None:
                self.messages.append((
                    f"pytest-sabot: {self.out_dir / 'results.json'} could not be read; it is "
                    f"set aside as {aside.name} (nothing in it is lost) and this session's "
                    "board takes its place; the cell records are untouched", True))
            self.reserve = manifest_mod.reserve(self.out_dir, self.run_id, cells)
            manifest_mod.write_manifest(self.out_dir, finishing.manifest(self, "running", ""))
            finishing.write_pending(self)
        except OutputInUse as exc:
            raise preflight.usage(f"--sabot-out={self.out_dir}: {exc}; nothing was run") from None
        except (OutputUnwritable, OSError) as exc:
            if self.reserve is not None:
                manifest_mod.release(self.reserve)
            if self.out_lock is not None:
                self.out_lock.release()
            raise preflight.usage(
                f"--sabot-out={self.out_dir}: the session's record cannot be written "
                f"({exc}); nothing was run"
            ) from None
        self.output_started = True

    def _build_runner(self, ids: Sequence[str]) -> None:
        from pytest_sabot.session.runner import SIM_JUDGE_LABEL, CellRunner

        settings = self.runner_settings()
        self.runner = CellRunner(
            std=self.standard,
            settings=settings,
            selected=frozenset(ids),
            resume=self.settings.resume,
            rerun_errors=self.settings.rerun_errors,
            junit_properties=junit.case_properties_allowed(self.config),
            gateway=gateway_mod.own_client(self.gateway),
        )
        self._build_pool()
        if self.settings.judge != "none":
            backend, note = self._make_judge()
            self.runner.judge = backend
            self.judge_note = note
            self.runner.judge_label = (
                SIM_JUDGE_LABEL
                if backend.fixture
                else f"judge {backend.name}"
            )

    def concurrency(self, processes: int) -> int:
        """Cells in flight per process (--sabot-concurrency, or its automatic value)."""
        from pytest_sabot.session import inflight

        model = self.settings.model
        return inflight.choose(
            self.settings.concurrency,
            keyless_instant=model.is_replay or (model.is_sim and self.settings.sim_latency <= 0),
            max_connections=self.settings.max_connections,
            processes=processes,
            alone=bool(self.settings.agent),
        )

    def _build_pool(self) -> None:
        from pytest_sabot.core.frameworks import adapter
        from pytest_sabot.session import inflight

        workerinput: dict[str, Any] = getattr(self.config, "workerinput", {})
        width = self.concurrency(int(workerinput.get("workercount", 1) or 1))
        if width <= 1:
            return
        alone = frozenset(
            name for name in {c.framework for c in self.filtered}
            if adapter(name).one_run_at_a_time
        )
        assert self.runner is not None, "the runner is made before the pool"
        gateway = self.gateway
        shared = (
            gateway is not None and gateway.service.slots is not None
            and not self.settings.concurrency
        )
        self.pool = inflight.CellPool(
            self.runner.run, width, alone=alone, may_start=self._may_start_ahead,
            prepare=_import_framework,
            # The room a worker whose queue ran dry left in the shared budget (SPEC I162).
            wide=inflight.widest(self.settings.max_connections) if shared else 0,
            spare=(lambda: gateway_mod.spare_connections(gateway)) if shared and gateway
            else None,
        )

    def _may_start_ahead(self) -> bool:
        """Whether a cell may start ahead of its test: not once the session stops."""
        if self.stop_reason is not None:
            return False
        return not (
            self.settings.live
            and gateway_mod.budget_stopped(self.gateway, self.settings, self.run_id)
        )

    def _run_one(self, item: pytest.Item, session: pytest.Session, cell: Cell) -> Any:
        """The cell's result: run now, or by the pool with the cells queued after it."""
        assert self.runner is not None, "a cell runs only in a session with a wave"
        if self.pool is None:
            return self.runner.run(cell)
        from pytest_sabot.session import inflight

        ahead = [
            self.standard.cell(cid)
            for cid in (
                cell_id_of(i.nodeid)
                for i in inflight.upcoming_items(session, item, self.pool.lookahead)
            )
            if cid is not None
        ]
        return self.pool.result(cell, ahead)

    # ------------------------------------------------------------------ one cell

    def run_cell(self, item: pytest.Item, session: pytest.Session, cell_id: str) -> dict[str, Any]:
        """Run one cell for its test (in the setup phase: a harness failure is an error)."""
        if self.runner is None:
            pytest.skip("no --sabot-wave given")
        cell = self.standard.cell(cell_id)
        if self.stop_reason is not None:
            pytest.skip(f"not run: the session is stopping ({self.stop_reason})")
        if self.settings.live and gateway_mod.budget_stopped(
            self.gateway, self.settings, self.run_id
        ):
            self._stop(session, "budget", "the spend cap is reached")
            pytest.skip("not run: the spend cap is reached")
        try:
            result: dict[str, Any] = self._run_one(item, session, cell)
        except OutputUnwritable as exc:
            message = (
                f"pytest-sabot: the output cannot be written: {exc}. The session stops; "
                "every record written before this one is intact"
            )
            item.stash[FATAL] = {"kind": "output unwritable", "message": str(exc)}
            self._stop(session, "output unwritable", str(exc))
            pytest.fail(message, pytrace=False)
        item.stash[RESULT] = result
        if result["budget_stop"]:
            self._stop(session, "budget", "the spend cap stopped a cell")
        if self.runner.junit_properties:
            item.user_properties.extend(result["properties"])
        if result["skip"]:
            from pytest_sabot.results.outcomes import STRUCTURAL_ZERO_SKIP

            pytest.skip(STRUCTURAL_ZERO_SKIP)
        return result

    def _stop(self, session: pytest.Session, reason: NotRunReason, detail: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
            self.stop_detail = detail
        session.shouldstop = f"pytest-sabot: {reason}: {detail}"

    # ------------------------------------------------------------------ reports

    def on_report(self, report: pytest.TestReport) -> None:
        """Controller (and a process without xdist): collect each cell's result."""
        if self.is_worker or self.std is None:
            return
        if (reported := cell_id_of(report.nodeid)) is not None:
            self.reported_cells.add(reported)  # any report of it: its testcase is open
        result = getattr(report, "sabot", None)
        if isinstance(result, dict):
            self.reports[result["cell_id"]] = result
            self.cell_reports[result["cell_id"]] = report
            self.events.extend(result.get("events", []))
            junit.annotate_case(self.config, report, result, self.std.wave.wave)
            if result.get("budget_stop") and self.stop_reason is None:
                self.stop_reason, self.stop_detail = "budget", "the spend cap stopped a cell"
        fatal = getattr(report, "sabot_fatal", None)
        if isinstance(fatal, dict) and self.stop_reason in (None, "budget"):
            self.stop_reason = "output unwritable"
            self.stop_detail = str(fatal.get("message", ""))

    def worker_crashed(self, nodeid: str, report: Any, sched: Any) -> None:
        from pytest_sabot.session import crashes

        crashes.worker_crashed(self, nodeid, report, sched)

    def runner_settings(self) -> RunSettings:
        from pytest_sabot.harness.run import RunSettings

        return RunSettings(
            root=self.standard.root,
            out_dir=self.out_dir,
            # A distributed session's controller runs no cell (it records crashed
            # workers' cells only): it has no gateway of its own.
            gateway_url=self.gateway_url or "",
            model=self.settings.model,
            timeout_s=self.attempt_timeout,
            max_model_calls=self.settings.max_model_calls,
            downgrade_model=self.settings.downgrade_model,
            session=self.run_id,
            registration_hash=self.standard.registration_hash(),
            rules=self.standard.rules.version,
        )

    # ------------------------------------------------------------------ finish

    def finish(self, session: pytest.Session) -> None:
        if not self.wave_given:  # a test run of the project: nothing of a wave to finish
            return
        if not self.is_worker:
            signals.hold()  # the results are written whatever SIGTERM comes now
        if self.pool is not None:  # cells started ahead of tests that will not run
            self.pool.stop()
        if self.is_worker:
            # The worker's gateway spend travels to the controller (xdist's workeroutput).
            spend = gateway_mod.stats(self.gateway)
            if spend is not None:
                self.config.workeroutput["sabot_gateway"] = spend  # type: ignore[attr-defined]
        from pytest_sabot.session import finishing

        finishing.finish(self, session)

    def worker_down(self, worker: str, workeroutput: dict[str, Any]) -> None:
        """Controller: a worker finished; keep what its gateway spent."""
        spend = workeroutput.get("sabot_gateway")
        if isinstance(spend, dict):
            self.worker_spend[worker] = spend

    def spend(self) -> dict[str, Any] | None:
        """The session's spend, every gateway of it together: its account's at a gateway
        given by URL. A live session always reports one (from the spend ledger when no
        gateway can tell)."""
        if self.gateway is None and self.settings.gateway_url:
            spent = gateway_mod.account_spend(self.gateway_url)
        else:
            spent = gateway_mod.session_spend(
                self.gateway, self.worker_spend,
                self.settings.max_connections if self.slots_dir is not None else None,
            )
        if not self.settings.live or (self.gateway is None and self.settings.gateway_url):
            return spent
        directory = gateway_mod.ledger_dir(self.settings, self.out_dir)
        if spent is None:
            return gateway_mod.ledger_spend(directory, self.run_id)
        return gateway_mod.with_ledger(spent, directory, self.run_id)

    # ------------------------------------------------------------------ terminal

    def summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.results is None and not self.messages:
            return
        from pytest_sabot.report.terminal import summary_text

        terminalreporter.section("Sabot")
        width = int(getattr(getattr(terminalreporter, "_tw", None), "fullwidth", 80) or 80)
        if self.results is not None:
            # The tables fitted to the terminal (80 columns when it says nothing), every
            # column in RESULTS.md (SPEC I79).
            for line in summary_text(self.results, width):
                terminalreporter.write_line(line)
            if self.results_written:
                for line in self._where_lines(width):
                    terminalreporter.write_line(line)
        for gate in self.gates:
            if gate.shown and not gate.passed:
                terminalreporter.write_line(f"gate failed: {gate.message}", red=True)
        for line, red in self.messages:
            terminalreporter.write_line(line, red=red)

    def _where_lines(self, width: int) -> list[str]:
        """Where the results are; when the session's board is not the directory's, what
        the directory's is and, for another rule version, both readings (SPEC I97, I98)."""
        boards = self.boards
        assert boards is not None
        mine = boards.session_dir
        shown = [mine / "results.json", mine / "RESULTS.md"]
        if self.report_html is not None and not boards.apart:
            shown.append(self.report_html)
        lines = ["results: " + ", ".join(map(str, shown))]
        if len(lines[0]) > width:  # one path a line where the three do not fit
            lines = ["results:", *(f"  {path}" for path in shown)]
        kept = self.directory_results
        if not boards.apart or kept is None or self.results is None:
            return lines
        what = ("the wave's board, kept: a slice never replaces it" if boards.wave is not None
                else f"the registered reading ({kept.rules})")
        lines.append(f"the directory's results are {what}: {boards.out_dir / 'results.json'}"
                     + (f", {self.report_html}" if self.report_html is not None else ""))
        if boards.registered_rules is not None and self.registered_reading is not None:
            lines += both_readings(self.registered_reading, self.results, width)
        return lines


def both_readings(registered: ResultsFile, chosen: ResultsFile, width: int) -> list[str]:
    """The registered reading beside the chosen one where they diverge (as ``sabot rescore
    --rules`` prints them)."""
    import io

    from rich.console import Console

    from pytest_sabot.report.terminal import side_by_side

    same = {r.row: (r.sabot_score.value, r.valid) for r in registered.scoreboard.rows} == {
        r.row: (r.sabot_score.value, r.valid) for r in chosen.scoreboard.rows
    }
    head = (f"both readings: {registered.rules} (registered) and {chosen.rules} "
            "(--sabot-rules)")
    if same:
        return [f"{head} agree on every row"]
    buffer = io.StringIO()
    side_by_side(registered, chosen, Console(file=buffer, width=width, color_system=None,
                                             highlight=False, soft_wrap=False))
    return [head + ":", *(line.rstrip() for line in buffer.getvalue().splitlines())]
