"""What the pipeline side of a run is handed, built so the ground truth is out of its reach.

A run has two sides. The harness side (``run.py``) holds the task's private spec: the pass
criterion, every operator's ground-truth note, the superseded material revisions. The
pipeline side is the framework adapter and everything it can touch. The adapter receives
exactly one object, a :class:`PipelineContext`, and nothing reachable from that object
holds a :class:`~pytest_sabot.tasks.loader.PrivateSpec`, an operator spec, a ground-truth
note or the pass criterion (SPEC.md I8, I39). That is true by construction:

* the context keeps the task's *public* view, the run's trace and gateway, the workspace
  and the tools, and the names of the files the world must hold at the end (the
  contract's artifact names, which the public view states too);
* the seams behind the tools, the handoff channel and the load stage (:class:`HarnessSeams`)
  keep the armed operator, which is armed from an :class:`InjectionPlan`: the half of the
  operator's spec that plants the fault (seam, target, original, injected content), never
  its note;
* a superseded material revision is kept only when the armed operator plants it (O5),
  because then it *is* the injected content.

Judging the artifact against the criterion, scoring and the judge stay on the harness side,
after the adapter has returned. ``tests/adapters/test_pipeline_context.py`` walks the
object graph reachable from a context (``gc.get_referents``) for every task and operator
and checks it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

from pytest_sabot.core.context import Messages
from pytest_sabot.core.model_spec import ModelSpec
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.models.task import ToolRole
from pytest_sabot.core.trace_io import TraceWriter
from pytest_sabot.harness import prompts
from pytest_sabot.harness.base_context import (
    BaseRunContext,
    RunParts,
    emit_injection,
    emit_model_call,
    run_parts,
)
from pytest_sabot.harness.base_world import BaseWorld
from pytest_sabot.operators import Operator, arm
from pytest_sabot.tasks import evaluate_pass
from pytest_sabot.tasks.loader import PrivateSpec
from pytest_sabot.tasks.world import Workspace, make_tools

if TYPE_CHECKING:
    from pytest_sabot.harness.task_world import Attempt

__all__ = [
    "FileTaskWorld",
    "HarnessSeams",
    "InjectionPlan",
    "PipelineContext",
    "arm_operator",
    "pipeline_context",
]


@dataclass(frozen=True)
class InjectionPlan:
    """How an operator plants its fault: its spec without the ground-truth note."""

    seam: str
    target: str
    original: str
    injected: str
    stale_file: str | None = None


def arm_operator(cell: Cell, private: PrivateSpec) -> Operator | None:
    """The cell's operator armed from its injection plan (None for a baseline)."""
    if cell.operator is None:
        return None
    spec = private.operator(cell.operator)
    plan = InjectionPlan(
        seam=spec.seam,
        target=spec.target,
        original=spec.original,
        injected=spec.injected,
        stale_file=spec.stale_file,
    )
    return arm(cell.operator, plan)


class HarnessSeams:
    """The harness side of every seam the pipeline passes through: the tools (records
    requests, observations and effects apart), the handoff channel, the load stage and the
    gateway's record of model calls. The armed operator acts here and only here."""

    def __init__(
        self,
        trace: TraceWriter,
        operator: Operator | None,
        stale_materials: dict[str, str],
    ) -> None:
        self.trace = trace
        self.operator = operator
        self._stale = dict(stale_materials)

    def record_injection(self) -> None:
        op = self.operator
        assert op is not None and op.planted is not None
        emit_injection(self.trace, "harness", op, op.planted)

    # ------------------------------------------------------------------ tools (ToolSeams)
    def on_call(self, tool: str, call_id: str, args: dict[str, Any]) -> None:
        self.trace.record("tool_call", "worker", tool=tool, call_id=call_id, arguments=args)

    def on_result(self, tool: str, role: ToolRole, call_number: int, observation: str) -> str:
        op = self.operator
        shown = observation
        if op is not None:
            changed = op.on_tool_result(tool, role, call_number, observation)
            if changed is not None:
                self.record_injection()
                shown = changed
        call_id = f"{tool}#{call_number}"  # the id the tool handed on_call
        self.trace.record("tool_result", "worker", shown, tool=tool, call_id=call_id, ok=True)
        return shown

    def on_effect(
        self, tool: str, call_id: str, target: str, commit: Any, observation: str
    ) -> tuple[str, bool]:
        op = self.operator
        skip = op is not None and op.skip_effect(tool, target)
        if skip:
            self.record_injection()
        else:
            commit()
        self.trace.record(
            "effect",
            "world",
            tool=tool,
            call_id=call_id,
            committed=not skip,
            target=target,
            detail="not written" if skip else "written",
        )
        self.trace.record(
            "tool_result", "worker", observation, tool=tool, call_id=call_id, ok=True
        )
        return observation, not skip

    # ------------------------------------------------------------------ other seams
    def worker_materials(self) -> dict[str, str] | None:
        """The load stage's O5 seam: a material text to hand the worker instead, or None."""
        if self.operator is None:
            return None
        override = self.operator.worker_materials(self._stale)
        if override is not None:
            self.record_injection()
        return override

    def deliver(self, channel: str, text: str) -> str:
        """The handoff channel's O3 seam: what the receiver gets."""
        if self.operator is None:
            return text
        changed = self.operator.on_handoff(channel, text)
        if changed is None:
            return text
        self.record_injection()
        return changed

    def model_call(self, record: Any) -> None:
        """Record one gateway exchange (and the injection at the call where the operator's
        fault landed: the first downgraded call of a served-model operator, O4)."""
        op = self.operator
        planted = None if op is None else op.on_model_call(
            record.agent, record.call_index, record.model_requested, record.model_served,
            bool(record.downgraded))
        if op is not None and planted is not None:
            emit_injection(self.trace, "gateway", op, planted)
        emit_model_call(self.trace, record)


@dataclass(kw_only=True)
class PipelineContext(BaseRunContext):
    """The RunContext an adapter receives for a file task (see core/context.py for the
    stage protocol; base_context.py for what every run context shares).

    It holds the cell's identity, the task's public view, the run's trace, gateway and
    workspace, and the seams; never the private spec (module docstring).
    """

    seams: HarnessSeams
    required_effects: tuple[str, ...]
    workspace: Workspace = field(init=False)

    def __post_init__(self) -> None:
        self.workspace = Workspace(self.run_dir)
        self._tools = make_tools(self.view, self.workspace, self.seams)

    def worker_prompt(self, round: int, feedback: str = "") -> Messages:
        # The load stage runs here: the O5 seam swaps a material for the worker's first pass
        # only; a revise pass reloads the current revision.
        override = self.seams.worker_materials() if round == 0 else None
        self.workspace.round = round  # the reviewer's tool log shows this pass's calls
        return prompts.worker_messages(self.view, round, feedback, override)

    def reviewer_prompt(self, delivered: str, round: int) -> Messages:
        return prompts.reviewer_messages(
            self.view,
            delivered,
            self.workspace.tool_log_text(),
            self.workspace.listing_text(),
            round,
            self.flags_protocol,
        )

    def magentic_task(self) -> str:
        return prompts.magentic_task(
            self.view, self.flags_protocol, self.seams.worker_materials()
        )

    def _deliver(self, channel: str, text: str) -> str:
        return self.seams.deliver(channel, text)  # the handoff channel's O3 seam

    def _record_model_call(self, record: Any) -> None:
        self.seams.model_call(record)  # and the O4 injection at the first downgraded call

    def _world_effects(self, artifact: str) -> dict[str, bool]:
        return self.workspace.effects(self.required_effects, artifact)


def pipeline_context(
    *, private: PrivateSpec, operator: Operator | None, **parts: Unpack[RunParts]
) -> PipelineContext:
    """The context handed to the adapter, taking from ``private`` only the names of the
    files the world must hold and, for the operator that plants one, the superseded
    material revision (the injected content itself)."""
    plants_material = operator is not None and operator.spec.seam == "material"
    seams = HarnessSeams(
        parts["trace"], operator, dict(private.stale_materials) if plants_material else {}
    )
    return PipelineContext.from_parts(
        parts, seams=seams, required_effects=tuple(private.required_effects)
    )


@dataclass
class FileTaskWorld(BaseWorld[Operator, PipelineContext]):
    """The world of a file task (T1-T5) for one attempt: the workspace behind the task's
    tools, judged by the task's pass criterion (task_world.py for the protocol)."""

    def _arm(self) -> Operator | None:
        return arm_operator(self.cell, self.private)

    def _build(self, attempt: Attempt) -> PipelineContext:
        return pipeline_context(
            private=self.private,
            operator=self.operator,
            **run_parts(self.cell, self.wave, self.view, attempt),
        )

    def finish(self, error: str | None, model: ModelSpec) -> str | None:
        """Nothing more to record: the world is the workspace, already on disk, and the
        effects were read when the artifact was emitted; the run error stays as it is."""
        return error

    def passed(self) -> tuple[bool, str]:
        """The task's criterion over the artifact and the required effects."""
        ctx = self._ctx
        if ctx is None or ctx.artifact is None:
            return False, "no artifact was emitted"
        return evaluate_pass(self.private, ctx.artifact, ctx.effects)
