"""The task-world protocol: what the run of a cell asks of the kind of task it runs.

``harness/run.py`` runs every cell the same way; what differs between a file task (T1-T5:
a workspace of files, the task's own tools, a deterministic pass criterion) and a lab task
(T6: a lab session behind the lab's tools, judged by the lab's rules over the committed
history) is a :class:`TaskWorld`, one per attempt, used in this order:

1. ``arm()``: the cell's operator armed from its injection plan (None for a baseline);
2. ``context(attempt)``: the run context handed to the adapter, the world behind its tools;
3. ``finish(error, model)``: after the pipeline has returned and the gateway run is closed,
   the world's own record of the run (a lab task's ``run.json``, and the gate's coverage
   check the operator's landing probe reads); a file task keeps nothing more;
4. ``passed()``: the task's pass criterion over what the run left, ``(passed, reason)``.

:func:`open_world` picks the world of a task; the file world lives in
``pipeline_context.py``, the lab world in ``lab_bridge.py``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pytest_sabot.core.model_spec import ModelSpec
from pytest_sabot.core.models.cells import Cell, WaveSpec
from pytest_sabot.core.trace_io import TraceWriter
from pytest_sabot.gateway.client import GatewayClient
from pytest_sabot.harness.base_context import BaseRunContext
from pytest_sabot.harness.lab_bridge import LabTaskWorld
from pytest_sabot.harness.pipeline_context import FileTaskWorld
from pytest_sabot.lab.task import LabPublicView
from pytest_sabot.matrix.defects import serves_ground_truth
from pytest_sabot.matrix.task_views import load_private, load_public
from pytest_sabot.operators import Operator
from pytest_sabot.tasks.loader import PrivateSpec, PublicView, with_ground_truth

__all__ = ["Attempt", "TaskWorld", "open_world", "task_views"]


@dataclass(frozen=True)
class Attempt:
    """What the harness opened for one attempt of a cell: its directory, its trace, the
    gateway and the run's key there, and the model name the frameworks send."""

    run_dir: Path
    trace: TraceWriter
    gateway: GatewayClient
    run_key: str
    model_name: str


class TaskWorld(Protocol):
    """The world of one attempt of one cell (module docstring for the order of calls)."""

    def arm(self) -> Operator | None:
        """The cell's operator, armed (None for a baseline)."""
        ...

    def context(self, attempt: Attempt) -> BaseRunContext:
        """The run context the adapter receives."""
        ...

    def finish(self, error: str | None, model: ModelSpec) -> str | None:
        """Close the world's own record of the run (``error``: the attempt's run error);
        the attempt's run error as the world reads it (a lab cell stopped by its deadline
        on a held call has none: that is its measured outcome, SPEC I131)."""
        ...

    def passed(self) -> tuple[bool, str]:
        """The task's pass criterion: whether the run passed, and why not."""
        ...


def open_world(cell: Cell, wave: WaveSpec, view: PublicView, private: PrivateSpec) -> TaskWorld:
    """The world of one attempt of ``cell``: a lab task's when its public view is a lab
    task's view, a file task's otherwise."""
    if isinstance(view, LabPublicView):
        return LabTaskWorld(cell=cell, wave=wave, view=view, private=private)
    return FileTaskWorld(cell=cell, wave=wave, view=view, private=private)


def task_views(root: Path, wave: WaveSpec, task: str) -> tuple[PublicView, PrivateSpec]:
    """What the pipeline of one of the wave's cells is handed (the task's public view for
    the wave's contract revision; in a wave that reproduces the published T3 defect, the
    task file's ground-truth section beside it, SPEC I86) and the private spec."""
    return _task_views(root, wave.wave, wave.contract_revision, task)


@functools.lru_cache(maxsize=64)
def _task_views(
    root: Path, wave: int, revision: str, task: str
) -> tuple[PublicView, PrivateSpec]:
    """Read once per process (the views and specs are frozen)."""
    view, private = load_public(task, root, revision), load_private(task, root)
    if serves_ground_truth(root, wave, task):
        view = with_ground_truth(view, private)
    return view, private
