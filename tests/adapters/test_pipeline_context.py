"""I39 (S1, S4, S5.8; DESIGN: fairness by construction): the object an adapter receives
holds no path to the ground truth.

The walk follows what an object holds — attributes, containers, closure cells, bound
``self`` — with ``gc.get_referents``, and stops at modules, classes and a function's module
globals (code an adapter could import is not data it was handed). Nothing reached may be a
private spec, an operator spec, a pass criterion, a ground-truth note, or, outside the O5
run that plants it, a superseded material revision. The one exception is the disclosed
defect waves 1 and 2 reproduce (SPEC I86): their T3 runs are handed the task file's
ground-truth section as a material, and nothing private beyond it.
"""

from __future__ import annotations

import gc
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from pytest_sabot.core.models import task as task_models
from pytest_sabot.core.models.cells import OPERATORS, TASKS, Cell
from pytest_sabot.core.models.defects import GROUND_TRUTH_MATERIAL
from pytest_sabot.gateway import GatewaySettings, start_gateway
from pytest_sabot.gateway.client import GatewayClient
from pytest_sabot.harness.pipeline_context import PipelineContext, arm_operator, pipeline_context
from pytest_sabot.harness.run import RunTrace, task_views
from pytest_sabot.matrix.standard import Standard, load_standard
from pytest_sabot.tasks.loader import PrivateSpec

FORBIDDEN_TYPES: tuple[type, ...] = (
    PrivateSpec,
    task_models.OperatorSpec,
    task_models.OperatorsFile,
    task_models.CriterionFile,
)


def criterion_types() -> tuple[type, ...]:
    """Every pydantic model class of models/task.py whose name says it is a criterion."""
    return tuple(
        value
        for name, value in vars(task_models).items()
        if isinstance(value, type) and issubclass(value, BaseModel) and "Criterion" in name
    )


def reachable(root: object) -> Iterator[Any]:
    """Every object reachable from ``root`` through what objects hold."""
    seen: set[int] = set()
    stack: list[Any] = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type | types.ModuleType):
            continue
        seen.add(id(obj))
        yield obj
        skip = obj.__globals__ if isinstance(obj, types.FunctionType) else None
        stack.extend(ref for ref in gc.get_referents(obj) if ref is not skip)


@pytest.fixture(scope="module")
def wave() -> Standard:
    return load_standard(2)


@pytest.fixture(scope="module")
def wave3() -> Standard:
    return load_standard(3)


def build(std: Standard, cell: Cell, run_dir: Path, gateway_url: str) -> PipelineContext:
    """The context exactly as the harness builds it for the adapter of ``cell``."""
    view, private = task_views(std.root, std.wave, cell.task)
    return pipeline_context(
        cell=cell,
        wave=std.wave,
        view=view,
        private=private,
        run_dir=run_dir,
        trace=RunTrace(run_dir),
        gateway=GatewayClient(gateway_url),
        run_key=f"{cell.id}~a1",
        model_name=std.wave.pipeline_model,
        operator=arm_operator(cell, private),
    )


def served_section(std: Standard, cell: Cell) -> str | None:
    """The ground-truth section a wave reproducing the published T3 defect serves (I86)."""
    names = {m.name: m.text for m in task_views(std.root, std.wave, cell.task)[0].materials}
    return names.get(GROUND_TRUTH_MATERIAL)


def assert_no_ground_truth(std: Standard, cell: Cell, ctx: PipelineContext) -> int:
    private = std.private(cell.task)
    notes = [spec.ground_truth for spec in private.operators.values()]
    stale = [] if cell.operator == "O5" else list(private.stale_materials.values())
    section = served_section(std, cell)
    forbidden = (*FORBIDDEN_TYPES, *criterion_types())
    count = 0
    for obj in reachable(ctx):
        count += 1
        assert not isinstance(obj, forbidden), f"{cell.id}: {type(obj).__name__} reachable"
        if isinstance(obj, str) and len(obj) > 20:
            if section is not None and obj == section:
                continue  # the disclosed T3 defect of waves 1 and 2, exactly as served
            assert not any(note in obj for note in notes), f"{cell.id}: a note is reachable"
            assert not any(text in obj for text in stale), f"{cell.id}: stale text reachable"
    return count


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("operator", [None, *OPERATORS])
def test_I39_what_adapters_receive_reaches_no_ground_truth(
    wave: Standard, task: str, operator: str | None, tmp_path: Path
) -> None:
    cell = Cell(wave=2, framework="langgraph", config="guardrail", operator=operator,
                task=task, seed=11)  # type: ignore[arg-type]
    ctx = build(wave, cell, tmp_path, "http://127.0.0.1:9/no-gateway-here")
    # The walk does reach the context's own data: the public view and the armed operator.
    reached = list(reachable(ctx))
    assert ctx.view in reached and ctx.seams in reached
    if operator is not None:
        assert ctx.seams.operator in reached
    assert assert_no_ground_truth(wave, cell, ctx) > 100


@pytest.mark.parametrize("operator", [None, *OPERATORS])
def test_I86_wave_2_t3_reaches_the_served_section_and_wave_3_t3_no_note(
    wave: Standard, wave3: Standard, operator: str | None, tmp_path: Path
) -> None:
    """The published T3 defect is reproduced in wave 2 (the notes reach the adapter only as
    the served section) and not in wave 3 (no note reaches it at all)."""
    for std, served in ((wave, True), (wave3, False)):
        cell = Cell(wave=std.wave.wave, framework="crewai", config="default",
                    operator=operator, task="T3", seed=11)  # type: ignore[arg-type]
        ctx = build(std, cell, tmp_path / str(std.wave.wave), "http://127.0.0.1:9/none")
        section = served_section(std, cell)
        assert (section is not None) is served
        if served:
            assert any(obj is ctx.view.material(GROUND_TRUTH_MATERIAL).text
                       for obj in reachable(ctx))
        assert assert_no_ground_truth(std, cell, ctx) > 100


def test_I39_the_walk_finds_a_private_spec_when_one_is_held(wave: Standard) -> None:
    """The check can fail: an object holding the private spec is caught."""
    holder = types.SimpleNamespace(spec=wave.private("T4"))
    assert any(isinstance(obj, PrivateSpec) for obj in reachable(holder))
    note = wave.private("T4").operator("O3").ground_truth
    assert any(isinstance(obj, str) and note in obj for obj in reachable(holder))


def test_I39_the_O5_seam_holds_the_stale_revision_it_plants_and_nothing_else(
    wave: Standard, tmp_path: Path
) -> None:
    cell = Cell(wave=2, framework="crewai", config="default", operator="O5", task="T4",
                seed=11)  # type: ignore[arg-type]
    ctx = build(wave, cell, tmp_path, "http://127.0.0.1:9/no-gateway-here")
    stale = wave.private("T4").stale_materials
    held = [obj for obj in reachable(ctx) if isinstance(obj, str) and obj in stale.values()]
    assert held, "the O5 seam must hold the superseded revision it plants"
    assert_no_ground_truth(wave, cell, ctx)


@pytest.mark.slow
def test_I39_after_a_real_run_the_context_still_reaches_no_ground_truth(
    wave: Standard, tmp_path: Path
) -> None:
    """A LangGraph O3 run on T4 through the embedded model: the adapter's run leaves the
    context (trace events, workspace, tools) still free of private text."""
    from pytest_sabot.adapters import get_adapter

    gateway = start_gateway(GatewaySettings())
    try:
        cell = wave.cell("langgraph-guardrail-O3-T4-s11")
        ctx = build(wave, cell, tmp_path, gateway.url)
        ctx.gateway.register_run(ctx.run_key, cell.id, cell.seed, "sim:vigilant", None)
        get_adapter(cell.framework)(ctx)
        ctx.close_gateway_run()
    finally:
        gateway.close()
    assert ctx.trace.events(), "the run recorded nothing"
    assert any(e.kind == "injection" for e in ctx.trace.events())
    assert_no_ground_truth(wave, cell, ctx)
