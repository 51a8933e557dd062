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
"""

from __future__ import annotations

import functools
import json
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.frameworks import adapter, installed_versions
from pytest_sabot.core.model_spec import ModelSpec, parse_model
from pytest_sabot.core.models.cells import Cell, WaveSpec
from pytest_sabot.core.records import (
    CRASH_FILE,
    OUTCOME_FILE,
    CrashNote,
    RunOutcome,
    cell_dir,
    now_iso,
    set_aside,
)
from pytest_sabot.core.trace_io import (
    PARTIAL_SUFFIX,
    TRACE_FILE,
    OutputUnwritable,
    TraceWriter,
    looks_like_output_error,
    parse_events,
    read_trace,
    write_json_atomic,
    write_text_atomic,
)
from pytest_sabot.gateway.client import GatewayClient
from pytest_sabot.harness.lab_bridge import (
    LabPipelineContext,
    arm_lab_operator,
    finish_lab,
    lab_pass,
    lab_pipeline_context,
    lab_scenario,
)
from pytest_sabot.harness.pipeline_context import (
    PipelineContext,
    arm_operator,
    pipeline_context,
)
from pytest_sabot.matrix.defects import serves_ground_truth
from pytest_sabot.operators import LabFault
from pytest_sabot.scoring.exclusions import run_error_reason
from pytest_sabot.tasks import evaluate_pass, load_private, load_public
from pytest_sabot.tasks.loader import PrivateSpec, PublicView, with_ground_truth

BUDGET_CODE = "sabot_budget_exhausted"
# The outcome model and the record's paths live in pytest_sabot.core.records, the
# adapter-facing context in pipeline_context.py; these names stay importable from here.
__all__ = [
    "CRASH_FILE",
    "OUTCOME_FILE",
    "CrashNote",
    "PipelineContext",
    "RunOutcome",
    "RunSettings",
    "cell_dir",
    "run_cell",
]


@dataclass(frozen=True)
class RunSettings:
    """How cells run: the standard's root, where output goes, which model serves."""

    root: Path
    out_dir: Path
    gateway_url: str
    model: ModelSpec = field(default_factory=lambda: parse_model("sim:realistic"))
    """The pipeline model (its text is accepted too, and parsed here once)."""
    timeout_s: float = 300.0
    downgrade_model: str | None = None
    attempts: int = 2
    session: str = ""  # run id of the session; every record carries it
    registration_hash: str = ""  # of the standard the cells come from (records carry it)
    rules: str = ""  # rule version of the session (records carry it)

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", parse_model(self.model))


def frameworks_model_name(settings: RunSettings, wave: WaveSpec) -> str:
    """The model name frameworks send: the standard's pipeline model under sim, the chosen
    upstream model when live."""
    if settings.model.is_live:
        return settings.model.name
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


def _run_adapter(ctx: PipelineContext | LabPipelineContext, timeout_s: float) -> str | None:
    """Run the framework pipeline in a thread; returns an error text or None.

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
            result["trace"] = traceback.format_exc(limit=8)
            result["exception"] = exc
        finally:
            ended.set()

    if timeout_s <= 0:  # no timeout: run in this thread (profiling, debugging)
        target()
        return result.get("error")
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
        return f"Timeout: the pipeline ran past {timeout_s:g}s"
    return result.get("error")


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
    lab = view.lab is not None  # a lab task: its world is a lab session (lab_bridge.py)
    operator = arm_lab_operator(cell, private) if lab else arm_operator(cell, private)
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
        model=settings.model.given,
        flags_protocol=wave.flags_protocol,
        versions=installed_versions(),
        attempt=attempt,
        materials=[m.name for m in view.materials],
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
    ctx: PipelineContext | LabPipelineContext
    scenario = lab_scenario(cell, view, private) if lab else None
    if scenario is not None:
        assert operator is None or isinstance(operator, LabFault)
        ctx = lab_pipeline_context(
            cell=cell, wave=wave, view=view, scenario=scenario, run_dir=run_dir, trace=trace,
            gateway=gateway, run_key=run_key, model_name=frameworks_model_name(settings, wave),
            operator=operator,
        )
    else:
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
        gateway.register_run(run_key, cell.id, cell.seed, settings.model.given, downgrade)
        error = _run_adapter(ctx, settings.timeout_s)
    except Exception as exc:  # gateway refused the run, etc.
        error = f"{type(exc).__name__}: {exc}"
    try:
        ctx.close_gateway_run()
    except Exception as exc:
        error = error or f"{type(exc).__name__}: {exc}"
    lab_record = None
    if scenario is not None and isinstance(ctx, LabPipelineContext):
        lab_record = finish_lab(ctx, scenario, error, settings.model.given,
                                settings.model.is_sim)
    _raise_if_unwritable(trace, run_dir, error)
    stopped: Literal["budget"] | None = (
        "budget" if _budget_stopped(trace.events(), error) else None
    )
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
    if lab_record is not None:
        passed, reason = lab_pass(lab_record, ctx.artifact)
    elif ctx.artifact is not None:
        passed, reason = evaluate_pass(private, ctx.artifact, ctx.effects)
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
        **_provenance(cell, wave, settings),
    )


def _provenance(cell: Cell, wave: WaveSpec, settings: RunSettings) -> dict[str, Any]:
    """What a record is made under: a baseline is reused only under the same values."""
    return {
        "session": settings.session,
        "model": settings.model.given,
        "downgrade_model": (
            settings.downgrade_model or wave.downgrade_model if cell.operator == "O4" else None
        ),
        "registration_hash": settings.registration_hash,
        "rules": settings.rules,
    }


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


def _crash_note(run_dir: Path) -> CrashNote | None:
    path = run_dir / CRASH_FILE
    if not path.is_file():
        return None
    return CrashNote.model_validate_json(path.read_text(encoding="utf-8"))


def _start_data(cell: Cell, wave: WaveSpec, settings: RunSettings, attempt: int) -> dict[str, Any]:
    return {
        "cell_id": cell.id,
        "wave": wave.wave,
        "framework": cell.framework,
        "config": cell.config,
        "operator": cell.operator,
        "task": cell.task,
        "seed": cell.seed,
        "rules": wave.rules,
        "model": settings.model.given,
        "flags_protocol": wave.flags_protocol,
        "materials": [m.name for m in task_views(settings.root, wave, cell.task)[0].materials],
        "versions": installed_versions(),
        "attempt": attempt,
    }


def close_crashed_trace(
    run_dir: Path, cell: Cell, wave: WaveSpec, settings: RunSettings, message: str, attempt: int
) -> Path:
    """Turn what a crashed process left (``events.jsonl.partial``, perhaps with a torn last
    line) into a complete trace ending in ``run_error`` and ``run_end``. The partial file is
    kept beside it as ``events.jsonl.crashed``; every whole line of it is in the trace."""
    partial = run_dir / (TRACE_FILE + PARTIAL_SUFFIX)
    lines: list[str] = []
    if partial.is_file():
        for line in partial.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                parse_events([line], partial)
            except Exception:
                break  # a torn line: the process died while writing it
            lines.append(line)
        partial.rename(run_dir / (TRACE_FILE + ".crashed"))
    events = [json.loads(line) for line in lines]
    if not events or events[0].get("kind") != "run_start":
        events = [
            {
                "seq": 0,
                "t": time.time(),
                "kind": "run_start",
                "component": "harness",
                "text": "",
                "data": _start_data(cell, wave, settings, attempt),
            }
        ]
    for kind, data in (
        ("run_error", {"error_type": "WorkerCrash", "message": message, "attempt": attempt}),
        ("run_end", {"status": "error", "detail": message}),
    ):
        events.append(
            {"seq": len(events), "t": time.time(), "kind": kind, "component": "harness",
             "text": "", "data": data}
        )
    text = "".join(json.dumps(e) + "\n" for e in events)
    parse_events(text.splitlines(), run_dir / TRACE_FILE)  # the result must be a valid trace
    path = run_dir / TRACE_FILE
    write_text_atomic(path, text)
    return path


def record_crash(
    cell: Cell, wave: WaveSpec, settings: RunSettings, message: str, attempt: int = 2
) -> RunOutcome:
    """The record of a cell whose worker process crashed on its retry too: RUN_ERROR with
    the crash as its text (the first crash counted as the first attempt)."""
    run_dir = cell_dir(settings.out_dir, cell.id)
    run_dir.mkdir(parents=True, exist_ok=True)
    close_crashed_trace(run_dir, cell, wave, settings, message, attempt)
    outcome = RunOutcome(
        cell_id=cell.id,
        attempts=attempt,
        error=message,
        passed=False,
        pass_reason="the worker process running the cell crashed",
        **_provenance(cell, wave, settings),
    )
    write_json_atomic(run_dir / OUTCOME_FILE, outcome.model_dump(mode="json"))
    return outcome


def note_crash(run_dir: Path, session: str, worker: str, message: str) -> None:
    """Mark a cell's unfinished files as a crashed first attempt, for its retry."""
    note = CrashNote(session=session, worker=worker, message=message, at=now_iso())
    write_json_atomic(run_dir / CRASH_FILE, note.model_dump(mode="json"))


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
    crash = _crash_note(run_dir) if run_dir.is_dir() else None
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
    write_json_atomic(run_dir / OUTCOME_FILE, outcome.model_dump(mode="json"))
    return outcome
