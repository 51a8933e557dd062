"""Reading and writing traces (events.jsonl).

A run appends to ``events.jsonl.partial`` with a flush per event, so a killed run keeps
everything recorded so far; ``finish()`` fsyncs and renames it to ``events.jsonl``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from pytest_sabot.errors import SabotDataError, from_validation_error
from pytest_sabot.models.trace import Trace, TraceEvent

TRACE_FILE = "events.jsonl"
PARTIAL_SUFFIX = ".partial"

_EVENT: TypeAdapter[Any] = TypeAdapter(TraceEvent)


class TraceWriter:
    """Thread-safe, append-only event log for one run. Assigns ``seq`` itself."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self.final_path = run_dir / TRACE_FILE
        self.partial_path = run_dir / (TRACE_FILE + PARTIAL_SUFFIX)
        self._lock = threading.Lock()
        self._events: list[Any] = []
        self._fh = self.partial_path.open("w", encoding="utf-8")

    @property
    def next_seq(self) -> int:
        with self._lock:
            return len(self._events)

    def emit(self, kind: str, component: str, text: str = "", **data: Any) -> Any:
        """Validate and append one event; returns the validated event."""
        with self._lock:
            raw = {
                "seq": len(self._events),
                "t": time.time(),
                "kind": kind,
                "component": component,
                "text": text,
                "data": data,
            }
            event = _EVENT.validate_python(raw)
            self._events.append(event)
            self._fh.write(json.dumps(_EVENT.dump_python(event, mode="json")) + "\n")
            self._fh.flush()
            return event

    def events(self) -> list[Any]:
        with self._lock:
            return list(self._events)

    def finish(self) -> Path:
        """fsync, close and atomically publish the trace as events.jsonl."""
        with self._lock:
            if not self._fh.closed:
                self._fh.flush()
                os.fsync(self._fh.fileno())
                self._fh.close()
            os.replace(self.partial_path, self.final_path)
        return self.final_path


def parse_events(lines: list[str], source: str | Path) -> Trace:
    """Parse JSONL lines into a validated Trace; errors name the file and the line."""
    events = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SabotDataError(
                source, f"line {number}", "one JSON object per line", str(exc)
            ) from None
        try:
            events.append(_EVENT.validate_python(raw))
        except ValidationError as exc:
            err = from_validation_error(source, exc)
            raise SabotDataError(
                source, f"line {number}.{err.field}", err.expected, err.got
            ) from None
    try:
        return Trace(events=events)
    except ValidationError as exc:
        raise from_validation_error(source, exc) from None


def read_trace(path: Path) -> Trace:
    """Read events.jsonl (or a directory holding it; a .partial file is read too)."""
    if path.is_dir():
        final = path / TRACE_FILE
        path = final if final.exists() else path / (TRACE_FILE + PARTIAL_SUFFIX)
    return parse_events(path.read_text(encoding="utf-8").splitlines(), path)


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON via a temp file, fsync and os.replace, so a kill leaves the old file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
