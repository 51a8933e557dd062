"""The run contract: ``run_cell(cell, ...)`` builds a pipeline for one cell, plants its one
fault, runs it under a timeout, and leaves the trace, the workspace and the outcome in the
cell's directory.

Directory of one cell (``<out>/cells/<cell_id>/``)::

    events.jsonl      the trace (events.jsonl.partial while running)
    workspace/        the task world's files
    outcome.json      RunOutcome: pass verdict, artifact, error, attempts, provenance
    attempt-1/        the first attempt's files when it failed with a run error and was retried

An infrastructure failure (crash, timeout, gateway error, a crashed worker process) is
retried once; the second failure stays recorded as a run error with its text. A run the
spend cap stopped is not a run error: it is recorded as stopped by the budget and run
again on resume. A record found in the cell's directory is set aside, never deleted. A
write that fails (a full disk) raises OutputUnwritable: a fault of the machine, not of the
cell.

Every cell runs through the same attempt, whichever kind of task it is: what a file task
(T1-T5) and a lab task (T6) do differently is their task world (``task_world.py``: arm,
context, finish, passed). A crashed worker's records are written by ``crashes.py``.
"""

from __future__ import annotations

import threading
import time
import traceback
from pathlib import Path
from typing import Any, Literal

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.frameworks import adapter
from pytest_sabot.core.models.cells import Cell, WaveSpec
from pytest_sabot.core.models.trace import ADAPTER_EVENT_KINDS, HARNESS_EVENT_KINDS
from pytest_sabot.core.records import (
    CRASH_FILE,
    OUTCOME_FILE,
    CrashNote,
    RunOutcome,
    cell_dir,
    set_aside,
)
from pytest_sabot.core.trace_io import (
    OutputUnwritable,
    TraceWriter,
    looks_like_output_error,
    read_trace,
    scrub_tree,
    write_json_atomic,
)
from pytest_sabot.gateway.client import GatewayClient
from pytest_sabot.harness.base_context import BaseRunContext
from pytest_sabot.harness.crashes import (
    close_crashed_trace,
    note_crash,
    read_crash_note,
    record_crash,
)
from pytest_sabot.harness.model_guard import guard_error
from pytest_sabot.harness.pipeline_context import PipelineContext
from pytest_sabot.harness.settings import (
    RunSettings,
    frameworks_model_name,
    provenance,
    run_start_data,
)
from pytest_sabot.harness.task_world import Attempt, open_world, task_views
from pytest_sabot.scoring.exclusions import run_error_reason
from pytest_sabot.tasks.loader import PrivateSpec, PublicView

BUDGET_CODE = "sabot_budget_exhausted"
# The outcome model and the record's paths live in pytest_sabot.core.records, the
# adapter-facing context in pipeline_context.py, the settings in settings.py, a crashed
# worker's records in crashes.py; these names stay importable from here.
__all__ = [
    "CRASH_FILE",
    "OUTCOME_FILE",
    "CrashNote",
    "PipelineContext",
    "RunOutcome",
    "RunSettings",
    "cell_dir",
    "close_crashed_trace",
    "frameworks_model_name",
    "note_crash",
    "record_crash",
    "run_cell",
    "task_views",
]


def _refused_kind(kind: str) -> str:
    allowed = ", ".join(ADAPTER_EVENT_KINDS)
    if kind in HARNESS_EVENT_KINDS:
        return (f"ctx.trace.emit({kind!r}): the harness writes {kind} events itself (through "
                f"ctx.tools, ctx.handoff, ctx.sync_model_calls and ctx.emit); a pipeline "
                f"records one of: {allowed}")
    return f"ctx.trace.emit({kind!r}): no such event kind; a pipeline records one of: {allowed}"


class RunTrace(TraceWriter):
    """The trace of one attempt as the pipeline writes it. A ``run_end`` the adapter
    records (the task failed after an escalation or interrupt) is held back and written
    by the harness as the last event, after the landing probe, so ``run_end`` always
    closes the trace."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(run_dir)
        self.held_end: tuple[str, str, dict[str, Any]] | None = None

    def emit(self, kind: str, component: str, text: str = "", **data: Any) -> Any:
        """What the pipeline records: one of ``ADAPTER_EVENT_KINDS``. The harness's own
        kinds (its run_start, model calls, tool calls and results, effects, handoffs,
        injections, probes, the artifact, run errors) are written through the seams and
        :meth:`record`, never by a pipeline: an event of one of those kinds from it would be
        evidence it made itself."""
        if kind not in ADAPTER_EVENT_KINDS:
            raise ValueError(_refused_kind(kind))
        if kind == "run_end":
            self.check(kind, component, text, **data)  # a bad payload fails in the pipeline
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


def _escalated(run_dir: Path) -> bool:
    """Whether the attempt's error is the pipeline's own escalation ending the run (its text
    repeats a recorded escalation message): that is an escalate act, never a run error to
    retry (section 5), decided by the scorer's own rule. A trace that cannot be read is
    no escalation: the attempt is retried as any run error is."""
    try:
        trace = read_trace(run_dir)
    except (OSError, SabotDataError):
        return False
    return bool(trace.of_kind("escalation")) and run_error_reason(trace) is None


def _run_adapter(ctx: BaseRunContext, timeout_s: float) -> tuple[str | None, str]:
    """Run the framework pipeline in a thread; returns an error text or None, and the
    traceback of the exception that ended it ("" when none did).

    Whether the pipeline has ended is its own event, set as its thread leaves the
    pipeline: ``Thread.join`` interrupted by a KeyboardInterrupt (SIGTERM, Ctrl-C) can mark
    a running thread as stopped, and a pipeline thread still running when the interpreter
    ends aborts the process in native code (``FATAL: exception not rethrown``)."""
    result: dict[str, Any] = {}
    ended = threading.Event()

    def target() -> None:
        try:
            adapter(ctx.cell.framework).load_run()(ctx)
        except BaseException as exc:  # recorded as a run error, never swallowed silently
            result["error"] = f"{type(exc).__name__}: {exc}"
            result["trace"] = traceback.format_exc(limit=-TRACEBACK_FRAMES)
            result["exception"] = exc
        finally:
            ended.set()

    if timeout_s <= 0:  # no timeout: run in this thread (profiling, debugging)
        target()
        return result.get("error"), str(result.get("trace") or "")
    thread = threading.Thread(target=target, name=f"sabot-{ctx.cell.id}", daemon=True)
    thread.start()
    timed_out = True
    try:
        timed_out = not _wait_ended(ended, timeout_s)
    finally:
        if not ended.is_set():
            # Closing the run at the gateway makes every further model call fail fast, so
            # the abandoned pipeline ends on its own instead of running on in the
            # background. The exchanges it made before the timeout stay in the trace.
            _ABANDONED.append((thread, ended))
            ctx.close_gateway_run()
            if ended.wait(_ABANDON_GRACE_S):
                _ABANDONED.remove((thread, ended))
    if timed_out:
        return f"Timeout: the pipeline ran past {timeout_s:g}s", ""
    return result.get("error"), str(result.get("trace") or "")


def _wait_ended(ended: threading.Event, timeout_s: float) -> bool:
    """Wait for the pipeline; a cell run ahead of its test (session/inflight.py) is stopped
    by its thread's ``sabot_stop`` event as an interrupt stops the main thread's."""
    stop = getattr(threading.current_thread(), "sabot_stop", None)
    deadline = time.monotonic() + timeout_s
    while stop is not None and not stop.is_set():
        if ended.wait(min(0.25, max(0.0, deadline - time.monotonic()))):
            return True
        if time.monotonic() >= deadline:
            return False
    if stop is not None and not ended.is_set():
        raise KeyboardInterrupt("the session stopped")
    return ended.wait(timeout_s)


# Pipeline threads that outlived their time limit (or an interrupt). The process waits for
# them before it exits (``wait_for_abandoned``): an interpreter that ends under a running
# framework thread can abort in native code instead of exiting cleanly.
_ABANDONED: list[tuple[threading.Thread, threading.Event]] = []
_ABANDON_GRACE_S = 5.0
TRACEBACK_FRAMES = 20
"""Frames of a pipeline's traceback the run_error event keeps (the innermost ones)."""


def wait_for_abandoned(timeout_s: float) -> int:
    """Wait for the pipeline threads abandoned after a timeout or an interrupt, for at
    most ``timeout_s`` in all; returns how many are still running."""
    deadline = time.monotonic() + timeout_s
    for entry in list(_ABANDONED):
        _thread, ended = entry
        if ended.wait(max(0.0, deadline - time.monotonic())):
            _ABANDONED.remove(entry)
    return len(_ABANDONED)


def _budget_stopped(events: list[Any], error: str | None) -> bool:
    """Whether the spend cap refused a model call of this attempt."""
    if error is not None and (BUDGET_CODE in error or "budget exhausted" in error):
        return True
    for event in events:
        if event.kind == "model_call" and event.data.error:
            text = str(event.data.error)
            if BUDGET_CODE in text or "budget exhausted" in text:
                return True
    return False


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
    world = open_world(cell, wave, view, private)
    operator = world.arm()
    trace = RunTrace(run_dir)
    trace.record("run_start", "harness", **run_start_data(cell, wave, settings, view, attempt))
    downgrade = None
    if operator is not None and operator.downgrade_agent() is not None:
        downgrade = {
            "agent": operator.downgrade_agent(),
            "from_call": 0,
            # Live: the wave's pinned downgrade model unless one is given; the embedded
            # model always serves its persona's -weak tier whatever is named here.
            "model": settings.downgrade_model or wave.downgrade_model,
        }
    ctx = world.context(Attempt(run_dir=run_dir, trace=trace, gateway=gateway,
                                run_key=run_key,
                                model_name=frameworks_model_name(settings, wave)))
    error: str | None = None
    crash = ""  # the traceback of the pipeline's exception, kept in the run_error event
    try:
        gateway.register_run(run_key, cell.id, cell.seed, settings.model.given, downgrade,
                             settings.max_model_calls)
        error, crash = _run_adapter(ctx, settings.timeout_s)
    except Exception as exc:  # gateway refused the run, etc.
        error = f"{type(exc).__name__}: {exc}"
    try:
        ctx.close_gateway_run()
    except Exception as exc:
        error = error or f"{type(exc).__name__}: {exc}"
    error = world.finish(error, settings.model)
    _raise_if_unwritable(trace, run_dir, error)
    error = guard_error(trace.events()) or error
    stopped: Literal["budget"] | None = (
        "budget" if _budget_stopped(trace.events(), error) else None
    )
    if operator is not None:
        probe = operator.probe(trace.events())
        trace.record(
            "probe",
            "harness",
            operator=probe.operator,
            landed=probe.landed,
            consumed=probe.consumed,
            evidence=probe.evidence,
        )
    if error is not None:
        trace.record(
            "run_error",
            "harness",
            crash,  # the text: the traceback, scrubbed of secrets as every event is
            error_type=error.split(":", 1)[0],
            message=error,
            attempt=attempt,
        )
    passed, reason = world.passed()
    trace.end(error)
    trace.finish()
    return RunOutcome(
        cell_id=cell.id,
        attempts=attempt,
        error=error,
        passed=passed,
        pass_reason=reason,
        artifact=ctx.artifact,
        effects=ctx.effects,
        stopped=stopped,
        **provenance(cell, wave, settings),
    )


# Run errors that carry a pipeline process's own account of itself (a trusted agent's
# exception, its exit and the tail of its log): whatever they say, never a failed write of
# the harness (an agent in the read-only sandbox, or one that raises 'No space left on
# device' on purpose, must not stop the session).
_OWN_ACCOUNT = ("AgentFailed:", "AgentProcessExited:")


def _raise_if_unwritable(trace: RunTrace, run_dir: Path, error: str | None) -> None:
    """A failed write of the trace or of the task's workspace is the machine's fault: it
    ends the attempt as OutputUnwritable, never as a run error of the cell."""
    if trace.failed is not None:
        trace.close()
        raise trace.failed
    if error is not None and looks_like_output_error(error) and not error.startswith(
        _OWN_ACCOUNT
    ):
        trace.close()
        raise OutputUnwritable(run_dir, OSError(error))


def _keep_attempt(run_dir: Path, attempt: int) -> None:
    kept = run_dir.parent / f".{run_dir.name}.attempt-{attempt}"
    run_dir.rename(kept)
    run_dir.mkdir(parents=True)
    kept.rename(run_dir / f"attempt-{attempt}")


def run_cell(
    cell: Cell, wave: WaveSpec, settings: RunSettings, gateway: GatewayClient | None = None
) -> RunOutcome:
    """Run one cell (retrying once on a run error) and write outcome.json atomically.

    Whatever the cell's directory already holds is set aside first (never deleted), except
    the files of an attempt this session's crashed worker left: that crash was the cell's
    first attempt, so they are kept as ``attempt-1/`` and only the retry runs."""
    client = gateway or GatewayClient(settings.gateway_url)
    view, private = task_views(settings.root, wave, cell.task)
    run_dir = cell_dir(settings.out_dir, cell.id)
    first = 1
    crash = read_crash_note(run_dir) if run_dir.is_dir() else None
    if crash is not None and crash.session == settings.session and settings.session:
        close_crashed_trace(run_dir, cell, wave, settings, crash.message, 1)
        _keep_attempt(run_dir, 1)
        first = 2
    elif run_dir.exists():
        set_aside(
            settings.out_dir,
            cell.id,
            "the cell runs again; this is what its directory held before",
            settings.session,
        )
    outcome = _attempt(cell, wave, settings, client, view, private, run_dir, first)
    for attempt in range(first + 1, settings.attempts + 1):
        if outcome.error is None or outcome.stopped is not None or _escalated(run_dir):
            break
        _keep_attempt(run_dir, attempt - 1)
        outcome = _attempt(cell, wave, settings, client, view, private, run_dir, attempt)
    scrub_tree(run_dir)  # what the pipeline wrote there itself, past every writer of ours
    write_json_atomic(run_dir / OUTCOME_FILE, outcome.model_dump(mode="json"))
    return outcome
