"""The records of a cell whose worker process crashed (SPEC.md I44).

A worker process that dies mid-cell leaves the cell's ``events.jsonl.partial`` and no
outcome. The session's controller notes the crash beside those files (:func:`note_crash`,
``crashed.json``) and hands the cell to a live worker, whose run counts the crash as the
cell's first attempt: :func:`read_crash_note` finds the note, :func:`close_crashed_trace`
turns what the dead process wrote into a complete trace, and only the retry runs. A cell
whose retry crashed too is recorded by the controller itself (:func:`record_crash`): a run
error with the crash as its text, never dropped.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from pytest_sabot.core.models.cells import Cell, WaveSpec
from pytest_sabot.core.models.trace import TraceEvent
from pytest_sabot.core.records import (
    CRASH_FILE,
    OUTCOME_FILE,
    CrashNote,
    RunOutcome,
    cell_dir,
    now_iso,
)
from pytest_sabot.core.trace_io import (
    PARTIAL_SUFFIX,
    TRACE_FILE,
    parse_events,
    read_record_if_present,
    write_record_atomic,
    write_text_atomic,
)
from pytest_sabot.harness.settings import RunSettings, provenance, run_start_data
from pytest_sabot.harness.task_world import task_views

__all__ = ["close_crashed_trace", "note_crash", "read_crash_note", "record_crash"]

_EVENT: TypeAdapter[Any] = TypeAdapter(TraceEvent)


def note_crash(run_dir: Path, session: str, worker: str, message: str) -> None:
    """Mark a cell's unfinished files as a crashed first attempt, for its retry."""
    note = CrashNote(session=session, worker=worker, message=message, at=now_iso())
    write_record_atomic(run_dir / CRASH_FILE, note)


def read_crash_note(run_dir: Path) -> CrashNote | None:
    """The crash note in a cell's directory, or None."""
    return read_record_if_present(run_dir / CRASH_FILE, CrashNote)


def _whole_event(line: str, seq: int) -> dict[str, Any] | None:
    """The event of one line of a partial trace, or None for a line the process did not
    finish (not JSON, not an event, or out of order). Each line is checked alone: the
    trace's own rules (run_start first, seq gap-free) hold for the whole, checked last."""
    try:
        raw = json.loads(line)
        _EVENT.validate_python(raw)
    except (ValueError, RecursionError):  # a ValidationError is a ValueError
        return None
    if not isinstance(raw, dict) or raw.get("seq") != seq:
        return None
    return raw


def close_crashed_trace(
    run_dir: Path, cell: Cell, wave: WaveSpec, settings: RunSettings, message: str, attempt: int
) -> Path:
    """Turn what a crashed process left (``events.jsonl.partial``, perhaps with a torn last
    line) into a complete trace ending in ``run_error`` and ``run_end``. The partial file is
    kept beside it as ``events.jsonl.crashed``; every whole line of it is in the trace."""
    partial = run_dir / (TRACE_FILE + PARTIAL_SUFFIX)
    events: list[dict[str, Any]] = []
    if partial.is_file():
        for line in partial.read_text(encoding="utf-8", errors="replace").splitlines():
            event = _whole_event(line, len(events))
            if event is None:
                break  # a torn line: the process died while writing it
            events.append(event)
        partial.rename(run_dir / (TRACE_FILE + ".crashed"))
    if not events or events[0].get("kind") != "run_start":
        view = task_views(settings.root, wave, cell.task)[0]
        events = [
            {
                "seq": 0,
                "t": time.time(),
                "kind": "run_start",
                "component": "harness",
                "text": "",
                "data": run_start_data(cell, wave, settings, view, attempt),
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
        **provenance(cell, wave, settings),
    )
    write_record_atomic(run_dir / OUTCOME_FILE, outcome)
    return outcome
