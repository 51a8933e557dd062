"""The pytest plugin: hooks only. Each one calls into the session object
(``pytest_sabot.session``), which holds the state of the session on this process.

``pytest --sabot-wave=N`` collects one test per registered cell (baselines first), fixes
the selection once pytest has made its own (``-k``, ``-m``, ``--lf``, pasted node ids),
runs each cell's real pipeline against the session's gateway, shows each verdict as the
test's outcome and, on the controller, scores the selection from disk, writes
results.json / RESULTS.md and prints the scoreboard.
"""

from __future__ import annotations

import warnings
from collections.abc import Generator
from typing import Any

import pytest

from pytest_sabot.session.core import FATAL, RESULT, STATE, SabotSession, session_of
from pytest_sabot.session.secrets import scrub_report, scrub_warning
from pytest_sabot.session.settings import add_options

# --------------------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_sabot import newhooks

    pluginmanager.add_hookspecs(newhooks)


# --------------------------------------------------------------------------- session


def pytest_configure(config: pytest.Config) -> None:
    session = SabotSession(config)
    config.stash[STATE] = session
    config.pluginmanager.register(ReportHooks(session), "sabot-reports")
    if config.pluginmanager.hasplugin("xdist"):
        from pytest_sabot.session.xdist import XdistHooks

        config.pluginmanager.register(XdistHooks(session), "sabot-xdist")
    session.configure()


def pytest_unconfigure(config: pytest.Config) -> None:
    if STATE in config.stash:
        session_of(config).unconfigure()


def pytest_sessionstart(session: pytest.Session) -> None:
    session_of(session.config).pytest_session = session


# --------------------------------------------------------------------------- collection


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.function.__name__ == "test_cell" and "sabot_cell_id" in metafunc.fixturenames:
        session_of(metafunc.config).parametrize(metafunc)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    session_of(session.config).collection_finished(session.items)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def sabot_standard(pytestconfig: pytest.Config) -> Any:
    """The loaded wave (spec, cells, rules, mappings, anchors)."""
    state = session_of(pytestconfig)
    if state.std is None:
        pytest.skip("no --sabot-wave given")
    return state.std


@pytest.fixture(scope="session")
def sabot_gateway(pytestconfig: pytest.Config) -> Any:
    """A GatewayClient for the session's gateway."""
    from pytest_sabot.gateway import GatewayClient

    state = session_of(pytestconfig)
    if state.gateway_url is None:
        pytest.skip("no gateway in this session (no --sabot-wave given)")
    return GatewayClient(state.gateway_url)


@pytest.fixture
def sabot_cell(request: pytest.FixtureRequest, sabot_standard: Any) -> Any:
    """The Cell of the current test (from its sabot_cell_id parameter)."""
    return sabot_standard.cell(request.getfixturevalue("sabot_cell_id"))


@pytest.fixture
def sabot_cell_result(request: pytest.FixtureRequest, sabot_cell_id: str) -> dict[str, Any]:
    """Run the test's cell while the test is set up, so a failure of the harness itself is
    a pytest error (E), never a verdict."""
    return session_of(request.config).run_cell(request.node, request.session, sabot_cell_id)


@pytest.fixture
def sabot_run(request: pytest.FixtureRequest, pytestconfig: pytest.Config) -> Any:
    """Run a Cell (resume-aware) and record its verdict on this test's report."""
    state: SabotSession = session_of(pytestconfig)

    def run(cell: Any) -> dict[str, Any]:
        if state.runner is None:
            pytest.skip("no --sabot-wave given")
        result: dict[str, Any] = state.runner.run(cell)
        request.node.stash[RESULT] = result
        if state.runner.junit_properties:
            request.node.user_properties.extend(result["properties"])
        return result

    return run


# --------------------------------------------------------------------------- reporting


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    result = item.stash.get(RESULT, None)
    if result is not None and report.when == ("setup" if result["skip"] else "call"):
        report.sabot = result  # type: ignore[attr-defined]
    fatal = item.stash.get(FATAL, None)
    if fatal is not None and report.when == "setup":
        report.sabot_fatal = fatal  # type: ignore[attr-defined]
    scrub_report(report)  # before it is printed, sent to the controller or put in JUnit
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_warning_recorded(warning_message: warnings.WarningMessage) -> None:
    scrub_warning(warning_message)  # before the summary prints it or a worker sends it


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    if report.outcome == "rerun":  # type: ignore[comparison-overlap]
        return "rerun", "r", "RERUN (worker crashed; the cell runs again)"
    if getattr(report, "sabot_crash", None):
        return "error", "E", "ERROR (worker crashed again; RUN_ERROR recorded)"
    result = getattr(report, "sabot", None)
    if result is None or report.failed or report.when not in ("setup", "call"):
        return None  # failures stay failures: their traceback must stay visible
    return result["category"], result["letter"], result["word"]


class ReportHooks:
    """``pytest_runtest_logreport`` has no config argument: this small plugin, registered
    for the session, hands each report to the session object."""

    def __init__(self, session: SabotSession) -> None:
        self.session = session

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """After JUnit has seen the report; on the controller (workers' reports arrive
        there) or in a process without xdist."""
        if report.outcome == "rerun":  # type: ignore[comparison-overlap]
            from pytest_sabot.session.junit import forget_case

            forget_case(self.session.config, report)
            return
        self.session.on_report(report)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session_of(session.config).finish(session)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    session_of(config).summary(terminalreporter)

