"""One path through the harness for both kinds of task (issue 23, item 3).

A file task (T1-T5) and a lab task (T6) are run by the same ``_attempt`` through the
task-world protocol of ``harness/task_world.py`` (arm, context, finish, passed); their run
contexts share ``harness/base_context.py``; the lab's prompts are composed by the task
prompts' builders; a crashed worker's records live in ``harness/crashes.py``. The contexts
are built here exactly as the harness builds them, from the registered standard.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sabot.core import prompt_format as pf
from pytest_sabot.core.context import RunContext
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.records import OUTCOME_FILE, RunOutcome, cell_dir
from pytest_sabot.core.trace_io import PARTIAL_SUFFIX, TRACE_FILE, TraceWriter, read_trace
from pytest_sabot.gateway.client import GatewayClient
from pytest_sabot.harness import crashes, lab_prompts, prompts, run
from pytest_sabot.harness.base_context import BaseRunContext
from pytest_sabot.harness.lab_bridge import LabPipelineContext, LabTaskWorld
from pytest_sabot.harness.pipeline_context import FileTaskWorld, PipelineContext
from pytest_sabot.harness.settings import RunSettings, run_start_data
from pytest_sabot.harness.task_world import Attempt, open_world, task_views
from pytest_sabot.lab.catalog import build_catalog
from pytest_sabot.matrix.standard import Standard, load_standard

NO_GATEWAY = "http://127.0.0.1:9/no-gateway-here"  # building a context calls no gateway

# What the base holds once: the accessors both run contexts had each written out.
SHARED = ("base_url", "scoped_endpoint", "http_client", "http_async_client", "tools",
          "handoff", "guardrail_text", "check_contract", "sync_model_calls",
          "close_gateway_run", "emit", "is_magentic")


@pytest.fixture(scope="module")
def wave1() -> Standard:
    return load_standard(1)


@pytest.fixture(scope="module")
def lab() -> Standard:
    return load_standard("lab")


def _attempt(run_dir: Path, std: Standard, cell: Cell) -> Attempt:
    return Attempt(run_dir=run_dir, trace=TraceWriter(run_dir), gateway=GatewayClient(NO_GATEWAY),
                   run_key=f"{cell.id}~a1", model_name=std.wave.pipeline_model)


def _world(std: Standard, cell_id: str) -> tuple[Cell, FileTaskWorld | LabTaskWorld]:
    cell = std.cell(cell_id)
    view, private = task_views(std.root, std.wave, cell.task)
    world = open_world(cell, std.wave, view, private)
    assert isinstance(world, FileTaskWorld | LabTaskWorld)
    return cell, world


def test_23_3_a_lab_task_opens_the_lab_world_and_a_file_task_the_file_world(
    wave1: Standard, lab: Standard, tmp_path: Path
) -> None:
    for std, cell_id, world_type, ctx_type in (
        (wave1, "crewai-default-O3-T2-s11", FileTaskWorld, PipelineContext),
        (lab, "langgraph-default-O8-T6-s11", LabTaskWorld, LabPipelineContext),
    ):
        cell, world = _world(std, cell_id)
        assert type(world) is world_type, cell_id
        operator = world.arm()
        assert operator is not None and operator.id == cell.operator
        ctx = world.context(_attempt(tmp_path / cell_id, std, cell))
        assert type(ctx) is ctx_type and isinstance(ctx, BaseRunContext)
        assert ctx.cell is cell and ctx.run_key == f"{cell_id}~a1"


def test_23_3_a_world_builds_its_context_only_once_armed(wave1: Standard, lab: Standard,
                                                         tmp_path: Path) -> None:
    for std, cell_id in ((wave1, "langgraph-default-baseline-T1-s11"),
                         (lab, "langgraph-default-baseline-T6-s11")):
        cell, world = _world(std, cell_id)
        with pytest.raises(AssertionError, match="armed before its context"):
            world.context(_attempt(tmp_path / cell_id, std, cell))
        assert world.arm() is None  # a baseline arms nothing
        world.context(_attempt(tmp_path / cell_id, std, cell))


def test_23_3_a_file_world_without_an_artifact_has_not_passed(wave1: Standard,
                                                              tmp_path: Path) -> None:
    cell, world = _world(wave1, "langgraph-default-baseline-T1-s11")
    world.arm()
    ctx = world.context(_attempt(tmp_path, wave1, cell))
    world.finish(None, RunSettings(root=wave1.root, out_dir=tmp_path, gateway_url="").model)
    assert ctx.artifact is None
    assert world.passed() == (False, "no artifact was emitted")


def test_23_3_a_lab_world_is_judged_only_after_finish(lab: Standard, tmp_path: Path) -> None:
    cell, world = _world(lab, "langgraph-default-baseline-T6-s11")
    world.arm()
    world.context(_attempt(tmp_path, lab, cell))
    with pytest.raises(AssertionError, match="not finished"):
        world.passed()


def test_23_3_the_two_run_contexts_share_one_base_and_keep_the_adapters_protocol(
    wave1: Standard, lab: Standard, tmp_path: Path
) -> None:
    for ctx_type in (PipelineContext, LabPipelineContext):
        assert issubclass(ctx_type, BaseRunContext)
        written_again = [name for name in SHARED if name in vars(ctx_type)]
        assert written_again == [], f"{ctx_type.__name__} writes {written_again} again"
    members = [name for name in vars(RunContext) if not name.startswith("_")]
    assert {"base_url", "tools", "emit", "worker_prompt", "handoff"} <= set(members)
    for std, cell_id in ((wave1, "autogen-default-O3-T4-s11"),
                         (lab, "crewai-default-O9-T6-s11")):
        cell, world = _world(std, cell_id)
        world.arm()
        ctx = world.context(_attempt(tmp_path / cell_id, std, cell))
        missing = [name for name in members if not hasattr(ctx, name)]
        assert missing == [], f"{cell_id}: the context lacks {missing}"
        assert ctx.base_url("worker").endswith("/v1") and ctx.tools


def _names(text: str) -> list[str]:
    """The section names of a prompt (the preamble before the first section has none)."""
    return [s.name for s in pf.parse(text) if s.name]


def test_23_3_the_lab_prompts_are_the_task_prompts_with_the_labs_tools(
    wave1: Standard, lab: Standard
) -> None:
    file_view = task_views(wave1.root, wave1.wave, "T2")[0]
    lab_view = task_views(lab.root, lab.wave, "T6")[0]
    assert lab_view.lab is not None
    catalog = build_catalog(lab_view.lab.contracts, list(lab_view.lab.capabilities))
    tools = lab_prompts.tools_text(catalog)

    def without_materials(names: list[str]) -> list[str]:
        return [n for n in names if n != pf.MATERIAL]

    file_w = prompts.worker_messages(file_view, 1, "fix it", None)
    lab_w = lab_prompts.worker_messages(lab_view, catalog, 1, "fix it")
    assert without_materials(_names(lab_w.user)) == without_materials(_names(file_w.user))
    assert _names(lab_w.system) == _names(file_w.system) == [pf.ROLE]
    assert pf.first(pf.parse(lab_w.user), pf.TOOLS).body == tools  # type: ignore[union-attr]
    assert [s.label for s in pf.parse(lab_w.user) if s.name == pf.MATERIAL] == [
        m.name for m in lab_view.materials
    ]

    file_r = prompts.reviewer_messages(file_view, "d", "log", "a.txt", 0, True)
    lab_r = lab_prompts.reviewer_messages(lab_view, catalog, "d", "log", 0, True)
    assert without_materials(_names(lab_r.user)) == [
        n for n in without_materials(_names(file_r.user)) if n != pf.WORKSPACE
    ]  # a lab task has no workspace files to list
    for reviewer in (lab_r, file_r):
        protocol = pf.first(pf.parse(reviewer.system), pf.PROTOCOL)
        assert protocol is not None
        assert protocol.body == prompts.VERDICT_PROTOCOL + "\n" + prompts.FLAGS_ADDENDUM

    lab_m, file_m = lab_prompts.magentic_task(lab_view, catalog, True), prompts.magentic_task(
        file_view, True)
    assert without_materials(_names(lab_m)) == without_materials(_names(file_m))
    contract = pf.first(pf.parse(lab_m), pf.CONTRACT)
    assert contract is not None and contract.body.startswith(prompts.FLAGS_CONTRACT_HEAD)


def test_23_3_crash_records_close_what_the_dead_process_wrote(wave1: Standard,
                                                              tmp_path: Path) -> None:
    """A partial trace with a whole ``run_start``, one event and a torn line becomes a
    complete trace: the whole lines kept, then ``run_error`` (WorkerCrash) and ``run_end``."""
    cell = wave1.cell("langgraph-default-baseline-T1-s11")
    settings = RunSettings(root=wave1.root, out_dir=tmp_path, gateway_url="", session="s-1")
    run_dir = cell_dir(tmp_path, cell.id)
    writer = TraceWriter(run_dir)
    view = task_views(wave1.root, wave1.wave, "T1")[0]
    writer.emit("run_start", "harness", **run_start_data(cell, wave1.wave, settings, view, 1))
    writer.emit("message", "worker", "half way", sender="worker", receiver="reviewer",
                channel="worker->reviewer")
    partial = run_dir / (TRACE_FILE + PARTIAL_SUFFIX)
    whole = partial.read_text(encoding="utf-8")
    partial.write_text(whole + '{"seq": 2, "kind": "mes', encoding="utf-8")

    crashes.close_crashed_trace(run_dir, cell, wave1.wave, settings, "worker 'gw1' crashed", 1)
    trace = read_trace(run_dir)
    assert [e.kind for e in trace.events] == ["run_start", "message", "run_error", "run_end"]
    assert trace.of_kind("run_error")[0].data.error_type == "WorkerCrash"
    assert (run_dir / (TRACE_FILE + ".crashed")).read_text(encoding="utf-8").startswith(whole)


def test_23_3_a_crash_on_the_retry_is_recorded_as_a_run_error(wave1: Standard,
                                                              tmp_path: Path) -> None:
    """No partial trace at all: the record still opens with the cell's ``run_start``
    (materials from the task's public view) and its outcome names the crash."""
    cell = wave1.cell("crewai-default-O1-T3-s12")
    settings = RunSettings(root=wave1.root, out_dir=tmp_path, gateway_url="", session="s-1")
    outcome = crashes.record_crash(cell, wave1.wave, settings, "worker 'gw0' crashed")
    run_dir = cell_dir(tmp_path, cell.id)
    saved = RunOutcome.model_validate(json.loads((run_dir / OUTCOME_FILE).read_text()))
    assert saved == outcome and (outcome.attempts, outcome.error) == (2, "worker 'gw0' crashed")
    start = read_trace(run_dir).of_kind("run_start")[0].data
    view = task_views(wave1.root, wave1.wave, "T3")[0]
    assert (start.cell_id, start.attempt, start.materials) == (
        cell.id, 2, [m.name for m in view.materials])
    # the harness's own names stay importable where callers found them
    assert run.record_crash is crashes.record_crash and run.note_crash is crashes.note_crash
