"""The run contract: ``run_cell(cell, ...)`` builds a pipeline for one cell, plants its one
fault, runs it under a timeout, and leaves the trace, the workspace and the outcome in the
cell's directory.

Directory of one cell (``<out>/cells/<cell_id>/``)::

    events.jsonl      the trace (events.jsonl.partial while running)
    workspace/        the task world's files
    outcome.json      RunOutcome: pass verdict, artifact, error, attempts
    attempt-1/        the first attempt's files when it failed with a run error and was retried

An infrastructure failure (crash, timeout, gateway error) is retried once; the second
failure stays recorded as a run error with its text. Nothing recorded is deleted.
"""

from __future__ import annotations

import functools
import shutil
import threading
import traceback
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_sabot.gateway.client import GatewayClient
from pytest_sabot.harness.http import share_default_ssl_context
from pytest_sabot.harness.pipeline_context import (
    PipelineContext,
    arm_operator,
    pipeline_context,
    strip_flags_head,
)
from pytest_sabot.models.cells import Cell, WaveSpec
from pytest_sabot.tasks import evaluate_pass, load_private, load_public
from pytest_sabot.tasks.loader import PrivateSpec, PublicView
from pytest_sabot.trace_io import TraceWriter, write_json_atomic

OUTCOME_FILE = "outcome.json"
FRAMEWORK_PACKAGES = (
    "langgraph",
    "langchain-openai",
    "crewai",
    "autogen-agentchat",
    "autogen-core",
    "autogen-ext",
    "agent-framework-core",
    "agent-framework-openai",
    "agent-framework-orchestrations",
    "openai",
)
# The adapter-facing context and the FLAGS head split live in pipeline_context.py; both
# names stay importable from here.
__all__ = ["PipelineContext", "RunOutcome", "RunSettings", "run_cell", "strip_flags_head"]


class RunOutcome(BaseModel):
    """What the harness knows when a cell has run (outcome.json)."""

    model_config = ConfigDict(extra="forbid")

    cell_id: str
    attempts: int = Field(description="1, or 2 when the first attempt hit a run error.")
    error: str | None = Field(None, description="Run error text of the last attempt, if any.")
    passed: bool = Field(description="The task's pass criterion on the final artifact.")
    pass_reason: str = ""
    artifact: str | None = Field(None, description="The final artifact, FLAGS head stripped.")
    effects: dict[str, bool] = Field(default_factory=dict)
    session: str = Field("", description="The session that recorded this outcome.")


@dataclass(frozen=True)
class RunSettings:
    """How cells run: the standard's root, where output goes, which model serves."""

    root: Path
    out_dir: Path
    gateway_url: str
    model: str = "sim:realistic"
    timeout_s: float = 300.0
    downgrade_model: str | None = None
    attempts: int = 2
    session: str = ""  # id of the pytest session (resume re-runs run errors of older ones)


@functools.cache
def installed_versions() -> dict[str, str]:
    """Installed version of every framework package (for off-pin reporting)."""
    versions: dict[str, str] = {}
    for name in FRAMEWORK_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def frameworks_model_name(settings: RunSettings, wave: WaveSpec) -> str:
    """The model name frameworks send: the standard's pipeline model under sim, the chosen
    upstream model when live."""
    if settings.model.startswith("openai:"):
        return settings.model.split(":", 1)[1]
    return wave.pipeline_model


class RunTrace(TraceWriter):
    """The trace of one attempt as the pipeline writes it. A ``run_end`` the adapter
    records (the task failed after an escalation or interrupt) is held back and written
    by the harness as the last event, after the landing probe, so ``run_end`` always
    closes the trace."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(run_dir)
        self.held_end: tuple[str, str, dict[str, Any]] | None = None

    def emit(self, kind: str, component: str, text: str = "", **data: Any) -> Any:
        if kind == "run_end":
            self.held_end = (component, text, data)
            return None
        return super().emit(kind, component, text, **data)

    def end(self, error: str | None) -> None:
        """Write the one run_end: the adapter's own unless the attempt failed."""
        if error is None and self.held_end is not None:
            component, text, data = self.held_end
            super().emit("run_end", component, text, **data)
            return
        status = "completed"
        if error is not None:
            status = "timeout" if error.startswith("Timeout") else "error"
        super().emit("run_end", "harness", status=status, detail=error or "")


def _run_adapter(ctx: PipelineContext, timeout_s: float) -> str | None:
    """Run the framework pipeline in a thread; returns an error text or None."""
    from pytest_sabot.adapters import get_adapter

    result: dict[str, str] = {}

    def target() -> None:
        try:
            get_adapter(ctx.cell.framework)(ctx)
        except BaseException as exc:  # recorded as a run error, never swallowed silently
            result["error"] = f"{type(exc).__name__}: {exc}"
            result["trace"] = traceback.format_exc(limit=8)

    if timeout_s <= 0:  # no timeout: run in this thread (profiling, debugging)
        target()
        return result.get("error")
    thread = threading.Thread(target=target, name=f"sabot-{ctx.cell.id}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        # Closing the run at the gateway makes every further model call fail fast, so the
        # abandoned pipeline ends on its own instead of running on in the background. The
        # exchanges it made before the timeout stay in the trace.
        ctx.close_gateway_run()
        thread.join(5.0)
        return f"Timeout: the pipeline ran past {timeout_s:g}s"
    return result.get("error")


def _attempt(
    cell: Cell,
    wave: WaveSpec,
    settings: RunSettings,
    gateway: GatewayClient,
    view: PublicView,
    private: PrivateSpec,
    run_dir: Path,
    attempt: int,
) -> RunOutcome:
    run_key = f"{cell.id}~a{attempt}"
    operator = arm_operator(cell, private)
    trace = RunTrace(run_dir)
    trace.emit(
        "run_start",
        "harness",
        cell_id=cell.id,
        wave=wave.wave,
        framework=cell.framework,
        config=cell.config,
        operator=cell.operator,
        task=cell.task,
        seed=cell.seed,
        rules=wave.rules,
        model=settings.model,
        flags_protocol=wave.flags_protocol,
        versions=installed_versions(),
        attempt=attempt,
    )
    downgrade = None
    if operator is not None and operator.downgrade_agent() is not None:
        downgrade = {
            "agent": operator.downgrade_agent(),
            "from_call": 0,
            # Live: the wave's pinned downgrade model unless one is given; the embedded
            # model always serves its persona's -weak tier whatever is named here.
            "model": settings.downgrade_model or wave.downgrade_model,
        }
    ctx = pipeline_context(
        cell=cell,
        wave=wave,
        view=view,
        private=private,
        run_dir=run_dir,
        trace=trace,
        gateway=gateway,
        run_key=run_key,
        model_name=frameworks_model_name(settings, wave),
        operator=operator,
    )
    error: str | None = None
    try:
        gateway.register_run(run_key, cell.id, cell.seed, settings.model, downgrade)
        error = _run_adapter(ctx, settings.timeout_s)
    except Exception as exc:  # gateway refused the run, etc.
        error = f"{type(exc).__name__}: {exc}"
    try:
        ctx.close_gateway_run()
    except Exception as exc:
        error = error or f"{type(exc).__name__}: {exc}"
    if operator is not None:
        probe = operator.probe(trace.events())
        trace.emit(
            "probe",
            "harness",
            operator=probe.operator,
            landed=probe.landed,
            consumed=probe.consumed,
            evidence=probe.evidence,
        )
    if error is not None:
        trace.emit(
            "run_error",
            "harness",
            error_type=error.split(":", 1)[0],
            message=error,
            attempt=attempt,
        )
    passed, reason = (False, "no artifact was emitted")
    if ctx.artifact is not None:
        passed, reason = evaluate_pass(private, ctx.artifact, ctx.effects)
    trace.end(error)
    trace.finish()
    return RunOutcome(
        session=settings.session,
        cell_id=cell.id,
        attempts=attempt,
        error=error,
        passed=passed,
        pass_reason=reason,
        artifact=ctx.artifact,
        effects=ctx.effects,
    )


@functools.lru_cache(maxsize=64)
def _task_views(root: Path, task: str, revision: str) -> tuple[PublicView, PrivateSpec]:
    """A task's public view and private spec, read once per process (both are frozen)."""
    return load_public(task, root, revision), load_private(task, root)


def cell_dir(out_dir: Path, cell_id: str) -> Path:
    return out_dir / "cells" / cell_id


def run_cell(
    cell: Cell, wave: WaveSpec, settings: RunSettings, gateway: GatewayClient | None = None
) -> RunOutcome:
    """Run one cell (retrying once on a run error) and write outcome.json atomically."""
    share_default_ssl_context()
    client = gateway or GatewayClient(settings.gateway_url)
    view, private = _task_views(settings.root, cell.task, wave.contract_revision)
    run_dir = cell_dir(settings.out_dir, cell.id)
    if run_dir.exists():
        shutil.rmtree(run_dir)
    outcome = _attempt(cell, wave, settings, client, view, private, run_dir, 1)
    for attempt in range(2, settings.attempts + 1):
        if outcome.error is None:
            break
        kept = run_dir.parent / f".{cell.id}.attempt-{attempt - 1}"
        run_dir.rename(kept)
        run_dir.mkdir(parents=True)
        kept.rename(run_dir / f"attempt-{attempt - 1}")
        outcome = _attempt(cell, wave, settings, client, view, private, run_dir, attempt)
    write_json_atomic(run_dir / OUTCOME_FILE, outcome.model_dump(mode="json"))
    return outcome
