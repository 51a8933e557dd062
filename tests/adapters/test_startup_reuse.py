"""Issue 11, speed: what a framework builds that does not depend on the run is built once per
process (LangGraph's compiled graph per config, CrewAI's tool class and tool argument
models), and a run that reuses it records the same trace as a run in a fresh process.

Each test runs one real cell through the harness (``run_cell``) on the embedded model behind
a loopback gateway, twice in this process, and once more in a new Python process; the three
traces must be equal but for clock fields.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_sabot.core.records import cell_dir

ROOT = Path(__file__).resolve().parents[2]
MODEL = "sim:realistic"

pytestmark = pytest.mark.slow

_FRESH = """
import sys
from pathlib import Path
from pytest_sabot.gateway import start_gateway
from pytest_sabot.harness.run import RunSettings, run_cell
from pytest_sabot.matrix.standard import load_standard
std = load_standard(1, Path(sys.argv[1]))
with start_gateway() as gateway:
    settings = RunSettings(root=std.root, out_dir=Path(sys.argv[3]), gateway_url=gateway.url,
                           model=sys.argv[4])
    outcome = run_cell(std.cell(sys.argv[2]), std.wave, settings)
    if outcome.error is not None:
        raise SystemExit(f"run error: {outcome.error}")
"""


def _trace(out_dir: Path, cell_id: str) -> list[dict[str, Any]]:
    """The cell's events without what a clock writes (``t``, ``*_ms``)."""

    def scrub(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items() if k != "t" and not k.endswith("_ms")}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    path = cell_dir(out_dir, cell_id) / "events.jsonl"
    return [scrub(json.loads(line)) for line in path.read_text("utf-8").splitlines() if line]


def _fresh_process_trace(cell_id: str, out_dir: Path) -> list[dict[str, Any]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-c", _FRESH, str(ROOT), cell_id, str(out_dir), MODEL],
        # The tree's own directory first on sys.path (``-c`` puts the working directory there).
        cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return _trace(out_dir, cell_id)


def _two_runs_here(cell_id: str, tmp_path: Path) -> tuple[list[Any], list[Any]]:
    from pytest_sabot.gateway import start_gateway
    from pytest_sabot.harness.run import RunSettings, run_cell
    from pytest_sabot.matrix.standard import load_standard

    std = load_standard(1, ROOT)
    cell = std.cell(cell_id)
    traces = []
    with start_gateway() as gateway:
        for name in ("first", "second"):
            settings = RunSettings(
                root=std.root, out_dir=tmp_path / name, gateway_url=gateway.url, model=MODEL
            )
            outcome = run_cell(cell, std.wave, settings)
            assert outcome.error is None, outcome.error
            traces.append(_trace(tmp_path / name, cell_id))
    return traces[0], traces[1]


@pytest.mark.parametrize(
    "cell_id",
    ["langgraph-guardrail-O1-T1-s11", "langgraph-default-O3-T3-s12"],
)
def test_11_startup_langgraph_compiles_the_graph_once_per_config_and_records_the_same_trace(
    cell_id: str, tmp_path: Path
) -> None:
    from pytest_sabot.adapters.langgraph import pipeline

    config = cell_id.split("-")[1]
    first, second = _two_runs_here(cell_id, tmp_path)
    graph, saver = pipeline.compiled_graph(config)
    # A third run is handed the very graph the first two ran on ...
    assert pipeline.compiled_graph(config)[0] is graph
    # ... and no run leaves its thread behind in the shared checkpointer.
    assert not list(saver.list(None))
    fresh = _fresh_process_trace(cell_id, tmp_path / "fresh")
    assert first == second == fresh
    assert any(event["kind"] == "model_call" for event in first)


@pytest.mark.parametrize(
    "cell_id",
    ["crewai-guardrail-O1-T1-s11", "crewai-default-O3-T3-s12"],
)
def test_11_startup_crewai_builds_its_tool_classes_once_and_records_the_same_trace(
    cell_id: str, tmp_path: Path
) -> None:
    from pytest_sabot.adapters.crewai import pipeline

    first, second = _two_runs_here(cell_id, tmp_path)
    tool_class = pipeline._harness_tool_class()
    misses = pipeline._args_model_for.cache_info().misses
    # A run after the first two builds no class: the tool class and every argument model
    # of the task's tools come from the process's cache.
    third = tmp_path / "third"
    from pytest_sabot.gateway import start_gateway
    from pytest_sabot.harness.run import RunSettings, run_cell
    from pytest_sabot.matrix.standard import load_standard

    std = load_standard(1, ROOT)
    with start_gateway() as gateway:
        settings = RunSettings(root=std.root, out_dir=third, gateway_url=gateway.url, model=MODEL)
        assert run_cell(std.cell(cell_id), std.wave, settings).error is None
    assert pipeline._harness_tool_class() is tool_class
    assert pipeline._args_model_for.cache_info().misses == misses
    fresh = _fresh_process_trace(cell_id, tmp_path / "fresh")
    assert first == second == _trace(third, cell_id) == fresh
    assert any(event["kind"] == "tool_call" for event in first)


def test_11_startup_crewai_cached_tools_offer_the_model_what_a_fresh_build_offers(
    tmp_path: Path,
) -> None:
    """For every tool of every wave-1 task, the tool built from the process's cached class
    and argument model is offered to the model exactly as a tool built from scratch (a new
    ``BaseTool`` subclass on a new ``args_model``), field order and ``required`` order
    included: the schema is compared as JSON text, not as a dict."""
    from pytest_sabot.adapters.crewai import _env as crewai_env

    crewai_env.load_crewai()
    from crewai.tools import BaseTool
    from crewai.utilities.agent_utils import convert_tools_to_openai_schema

    from pytest_sabot.adapters.crewai import pipeline
    from pytest_sabot.matrix.standard import load_standard
    from pytest_sabot.tasks import load_public
    from pytest_sabot.tasks.world import PassThroughSeams, Workspace, make_tools

    def offered(tool: Any) -> str:
        schemas, _, _ = convert_tools_to_openai_schema([tool])
        return json.dumps(schemas)

    std = load_standard(1, ROOT)
    checked = 0
    for task in std.wave.tasks:
        view = load_public(task, std.root, std.wave.contract_revision)
        for handle in make_tools(view, Workspace(tmp_path / task), PassThroughSeams()):

            class FreshTool(BaseTool):
                def _run(self, *args: Any, **kwargs: Any) -> str:
                    return ""

            fresh = FreshTool(
                name=handle.name,
                description=handle.description,
                args_schema=pipeline.args_model(handle),
            )
            for _ in range(2):  # the first build fills the cache, the second reads it
                cached = pipeline._crewai_tool(handle, lambda: None)
                assert offered(cached) == offered(fresh), (task, handle.name)
                assert cached.description == fresh.description
            checked += 1
    assert checked >= len(std.wave.tasks)
