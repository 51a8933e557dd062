"""Fixtures of the report tests: real recorded runs (a keyless wave-1 slice through the
plugin, a second slice under another persona for compare, lab runs of a scripted
controller) and a headless Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from report_helpers import SLICE, Browser, chromium_context, recorded_run, shared_dir

from pytest_sabot.lab.controllers import resolve_agent
from pytest_sabot.lab.engine import run_scenario
from pytest_sabot.lab.record import LabRun
from pytest_sabot.lab.scenario_load import load_scenario, resolve_scenario


@pytest.fixture(scope="session")
def shared(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_dir(pytestconfig, tmp_path_factory, "sabot-report-runs")


@pytest.fixture(scope="session")
def wave_slice(shared: Path) -> Path:
    """Wave 1, task T1, seed 11, every framework and config: 42 cells, sim:realistic."""
    return recorded_run(shared, "slice-realistic", *SLICE)


@pytest.fixture(scope="session")
def vigilant_slice(shared: Path) -> Path:
    """The LangGraph cells of the same slice under sim:vigilant: the B side of compare."""
    return recorded_run(shared, "slice-vigilant", *SLICE, "--sabot-framework=langgraph",
                        "--sabot-model=sim:vigilant")


@pytest.fixture(scope="session")
def lab_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, LabRun]:
    """lost-create-response under builtin:naive: a duplicate ticket (LS1) and LC1."""
    out = tmp_path_factory.mktemp("lab")
    scenario = load_scenario(resolve_scenario("lost-create-response"))
    record = run_scenario(scenario, resolve_agent("builtin:naive"), out)
    return out / "run.json", record


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """One headless Chromium for the browser tests' module. Playwright's sync API keeps an
    event loop running in the main thread while it is open, so it is closed with the
    module: a later test's asyncio.run() in the same worker would otherwise be refused."""
    yield from chromium_context(tmp_path_factory.mktemp("chromium-profile"))


@pytest.fixture
def browser(chromium: Browser) -> Browser:
    """The session's Chromium with its request and error records cleared for this test."""
    chromium.reset()
    return chromium
