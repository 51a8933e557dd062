"""The pytest plugin: hooks only. Everything they do is a call into a layer.

``pytest --sabot-wave=N`` collects one test per registered cell (baselines first), runs each
cell's real pipeline against the session's gateway, shows each verdict as a custom outcome
and, on the controller, scores the whole wave from disk, writes results.json / RESULTS.md
and prints the scoreboard.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_sabot.errors import SabotDataError
from pytest_sabot.options import OPTIONS, resolve

CELL_MODULE = Path(__file__).with_name("sabot_cells.py")
_STATE = pytest.StashKey["SabotState"]()
FRAMEWORK_WARNING_MODULES = (
    r"crewai(\..*)?",
    r"autogen_\w+(\..*)?",
    r"langchain\w*(\..*)?",
    r"langgraph(\..*)?",
    r"opentelemetry(\..*)?",
    r"pydantic(\..*)?",
    r"chromadb(\..*)?",
    r"litellm(\..*)?",
)
_RESULT = pytest.StashKey[dict[str, Any]]()


class SabotState:
    """Per-process session state (controller or worker)."""

    def __init__(self, config: pytest.Config) -> None:
        self.values = {
            o.dest: resolve(o, config.getoption(o.dest, None), _ini(config, o.dest))
            for o in OPTIONS
        }
        self.wave = self.values["sabot_wave"]
        self.std: Any = None
        self.cells: list[Any] = []
        self.gateway: Any = None  # the running Gateway (controller only)
        self.gateway_url: str | None = None
        self.runner: Any = None
        self.results: Any = None
        self.reports: dict[str, dict[str, Any]] = {}
        self.fail_rows: list[str] = []
        self.judge_note: str | None = None
        # One id per pytest session (the controller's); outcomes carry it so a resumed
        # session can tell an earlier session's run errors from its own.
        self.session = uuid.uuid4().hex

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect each cell's result (on the controller these arrive from workers)."""
        result = getattr(report, "sabot", None)
        if result is not None and report.when == "call":
            self.reports[result["cell_id"]] = result

    @property
    def out_dir(self) -> Path:
        chosen = self.values["sabot_out"]
        return Path(chosen) if chosen else Path("reports") / f"wave-{self.std.wave.wave}"


def _ini(config: pytest.Config, name: str) -> Any:
    try:
        return config.getini(name)
    except ValueError:
        return None


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


# --------------------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sabot", "Sabot: plant faults in multi-agent pipelines")
    for o in OPTIONS:
        if o.kind == "bool":
            group.addoption(o.flag, action="store_true", dest=o.dest, default=None, help=o.help)
        else:
            group.addoption(o.flag, action="store", dest=o.dest, default=None, help=o.help)
        parser.addini(o.dest, o.help, default=None)


# --------------------------------------------------------------------------- configure


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sabot_cell(framework, config, operator, task, seed): one cell of a Sabot wave",
    )
    state = SabotState(config)
    config.stash[_STATE] = state
    config.pluginmanager.register(state, "sabot-state")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(), "sabot-xdist")
    if state.wave is None:
        return
    _quiet_framework_deprecations(config)
    from pytest_sabot.cells import select_cells
    from pytest_sabot.standard import load_standard

    v = state.values
    try:
        state.std = load_standard(state.wave, v["sabot_root"], rules=v["sabot_rules"])
        state.cells = select_cells(
            state.std.cells,
            framework=v["sabot_framework"],
            config=v["sabot_config"],
            operator=v["sabot_operator"],
            task=v["sabot_task"],
            seed=v["sabot_seed"],
        )
    except (SabotDataError, KeyError) as exc:
        raise pytest.UsageError(f"pytest-sabot: {exc}") from None
    if not _is_worker(config):
        _controller_setup(config, state)
    else:
        state.gateway_url = config.workerinput["sabot_gateway_url"]  # type: ignore[attr-defined]
        state.session = config.workerinput["sabot_session"]  # type: ignore[attr-defined]
    _collect_cells_module(config)


def _collect_cells_module(config: pytest.Config) -> None:
    """Add the cell module to what pytest collects. Explicit paths stay (a user may run their
    own tests beside the wave); a node id of the cell module itself, e.g.
    ``.../sabot_cells.py::test_cell[langgraph-default-O1-T1-s11]``, selects just that cell."""
    names = {str(CELL_MODULE), CELL_MODULE.name}
    if any(Path(arg.split("::", 1)[0]).name in names for arg in config.args):
        return
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        config.args.append(str(CELL_MODULE))
    else:
        config.args[:] = [str(CELL_MODULE)]


def _quiet_framework_deprecations(config: pytest.Config) -> None:
    """During a wave, the frameworks' own deprecation chatter (thousands of lines per wave)
    is not the user's to fix: filter it, for these modules only."""
    for category in ("DeprecationWarning", "PendingDeprecationWarning"):
        for module in FRAMEWORK_WARNING_MODULES:
            config.addinivalue_line("filterwarnings", f"ignore::{category}:{module}")


def _controller_setup(config: pytest.Config, state: SabotState) -> None:
    fresh = not state.values["sabot_resume"] and not config.option.collectonly
    if fresh and (state.out_dir / "cells").exists():
        shutil.rmtree(state.out_dir / "cells")
        shutil.rmtree(state.out_dir / "locks", ignore_errors=True)
    state.out_dir.mkdir(parents=True, exist_ok=True)
    if state.values["sabot_gateway_url"]:
        from pytest_sabot.gateway.client import split_gateway_url

        try:
            split_gateway_url(state.values["sabot_gateway_url"])
        except ValueError as exc:
            raise pytest.UsageError(f"pytest-sabot: --sabot-gateway-url: {exc}") from None
        state.gateway_url = state.values["sabot_gateway_url"]
        return
    from pytest_sabot.gateway import GatewaySettings, start_gateway

    model = str(state.values["sabot_model"])
    live = model.startswith("openai:")
    if live and not os.environ.get("OPENAI_API_KEY"):
        raise pytest.UsageError(
            f"pytest-sabot: --sabot-model={model} is a live run and needs the upstream key in "
            "the environment variable OPENAI_API_KEY (it is read from there only); nothing "
            "was run"
        )
    try:
        settings = GatewaySettings.from_options(state.values, state.out_dir)
    except (ValueError, SabotDataError) as exc:
        raise pytest.UsageError(f"pytest-sabot: {exc}") from None
    state.gateway = start_gateway(settings)
    state.gateway_url = state.gateway.url


class XdistHooks:
    """Hooks that exist only with pytest-xdist; registered only when it is loaded."""

    @staticmethod
    def pytest_configure_node(node: Any) -> None:
        """Hand every worker the controller's gateway address."""
        state = node.config.stash[_STATE]
        node.workerinput["sabot_gateway_url"] = state.gateway_url
        node.workerinput["sabot_session"] = state.session


# --------------------------------------------------------------------------- collection


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.function.__name__ != "test_cell" or "sabot_cell_id" not in metafunc.fixturenames:
        return
    state: SabotState = metafunc.config.stash[_STATE]
    if state.std is None:
        metafunc.parametrize("sabot_cell_id", [], ids=[])
        return
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
                )
            ],
        )
        for cell in state.cells
    ]
    metafunc.parametrize("sabot_cell_id", params)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state: SabotState = config.stash[_STATE]
    if state.std is None:
        return
    selected = frozenset(
        str(item.callspec.params["sabot_cell_id"])
        for item in items
        if isinstance(item, pytest.Function)
        and hasattr(item, "callspec")
        and "sabot_cell_id" in item.callspec.params
    )
    from pytest_sabot.harness.run import RunSettings
    from pytest_sabot.runner import CellRunner

    v = state.values
    assert state.gateway_url is not None
    settings = RunSettings(
        root=state.std.root,
        out_dir=state.out_dir,
        gateway_url=state.gateway_url,
        model=str(v["sabot_model"]),
        timeout_s=float(v["sabot_timeout"]),
        downgrade_model=v["sabot_downgrade_model"],
        session=state.session,
    )
    state.runner = CellRunner(std=state.std, settings=settings, selected=selected)
    _attach_judge(state)


def _attach_judge(state: SabotState) -> None:
    """Build the soft-tier judge for this process and prove its sandbox before the batch."""
    from pytest_sabot.judge import JudgeBackendError, make_backend

    spec = str(state.values["sabot_judge"])
    if spec == "none":
        return
    try:
        backend, note = make_backend(
            spec,
            pipeline_model=str(state.values["sabot_model"]),
            gateway_url=state.gateway_url,
            allow_same_lineage=bool(state.values["sabot_judge_same_lineage"]),
        )
        backend.assert_sandboxed()
    except JudgeBackendError as exc:
        raise pytest.UsageError(f"pytest-sabot: judge {spec!r} refused: {exc}") from None
    state.runner.judge = backend
    state.judge_note = note
    state.runner.judge_label = (
        "fixture of the embedded judge (sim), not a measurement of any model"
        if backend.fixture
        else f"judge {backend.name}"
    )


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def sabot_standard(pytestconfig: pytest.Config) -> Any:
    """The loaded wave (spec, cells, rules, mappings, anchors)."""
    state: SabotState = pytestconfig.stash[_STATE]
    if state.std is None:
        pytest.skip("no --sabot-wave given")
    return state.std


@pytest.fixture(scope="session")
def sabot_gateway(pytestconfig: pytest.Config) -> Any:
    """A GatewayClient for the session's gateway."""
    from pytest_sabot.gateway import GatewayClient

    state: SabotState = pytestconfig.stash[_STATE]
    if state.gateway_url is None:
        pytest.skip("no gateway in this session (no --sabot-wave given)")
    return GatewayClient(state.gateway_url)


@pytest.fixture
def sabot_cell(request: pytest.FixtureRequest, sabot_standard: Any) -> Any:
    """The Cell of the current test (from its sabot_cell_id parameter)."""
    return sabot_standard.cell(request.getfixturevalue("sabot_cell_id"))


@pytest.fixture
def sabot_run(request: pytest.FixtureRequest, pytestconfig: pytest.Config) -> Any:
    """Run a Cell (resume-aware) and record its verdict on this test's report."""
    state: SabotState = pytestconfig.stash[_STATE]

    def run(cell: Any) -> dict[str, Any]:
        result: dict[str, Any] = state.runner.run(cell)
        request.node.stash[_RESULT] = result
        request.node.user_properties.extend(result["properties"])
        return result

    return run


# --------------------------------------------------------------------------- reporting


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    result = item.stash.get(_RESULT, None)
    if result is not None and report.when == "call":
        report.sabot = result  # type: ignore[attr-defined]
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    result = getattr(report, "sabot", None)
    if result is None or report.when != "call":
        return None
    if report.failed:  # keep failures failures (their traceback must stay visible)
        return None
    return result["category"], result["letter"], result["word"]


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state: SabotState = config.stash[_STATE]
    if state.std is None or _is_worker(config):
        return
    if not state.reports:  # nothing ran (collection only, or everything deselected)
        if state.gateway is not None:
            state.gateway.close()
        return
    from pytest_sabot.report.render import markdown
    from pytest_sabot.results import build_results, write_results
    from pytest_sabot.trace_io import write_text_atomic

    spend = None
    if state.gateway is not None:
        spend = state.gateway.service.stats().model_dump(mode="json")
    selected = sorted(state.reports) or None
    judge = None
    if state.values["sabot_judge"] != "none":
        from pytest_sabot.judge.run import collect_summary

        judge = collect_summary(
            state.out_dir, selected or [], str(state.values["sabot_judge"]), state.judge_note
        )
    results = build_results(
        state.std,
        state.out_dir,
        selected_ids=selected,
        model=str(state.values["sabot_model"]),
        upstream=state.values["sabot_base_url"],
        spend=spend,
        judge=judge,
    )
    write_results(results, state.out_dir)
    write_text_atomic(state.out_dir / "RESULTS.md", markdown(results))
    state.results = results
    _junit_suite_properties(config, results)
    threshold = state.values["sabot_fail_under"]
    if threshold is not None:
        for row in results.scoreboard.rows:
            value = row.sabot_score.value
            if value is not None and value < threshold:
                state.fail_rows.append(f"{row.row} {value:.3f} < {threshold}")
        if state.fail_rows and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if state.gateway is not None:
        state.gateway.close()


def _junit_suite_properties(config: pytest.Config, results: Any) -> None:
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    xml.add_global_property("sabot.wave", str(results.wave))
    xml.add_global_property("sabot.rules", results.rules)
    xml.add_global_property("sabot.model", results.model)
    xml.add_global_property("sabot.label", results.label)
    for row in results.scoreboard.rows:
        value = row.sabot_score.value
        xml.add_global_property(f"sabot.score.{row.row}", "" if value is None else f"{value:.4f}")
        xml.add_global_property(f"sabot.valid.{row.row}", str(row.valid))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state: SabotState = config.stash[_STATE]
    if state.results is None:
        return
    from pytest_sabot.report.render import summary_lines

    terminalreporter.section("Sabot")
    for line in summary_lines(state.results):
        terminalreporter.write_line(line)
    terminalreporter.write_line(
        f"results: {state.out_dir / 'results.json'}, {state.out_dir / 'RESULTS.md'}"
    )
    for failure in state.fail_rows:
        terminalreporter.write_line(f"--sabot-fail-under: row {failure}", red=True)
