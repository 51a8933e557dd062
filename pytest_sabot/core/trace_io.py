"""Reading and writing traces (events.jsonl), and the atomic writes of every record.

A run appends to ``events.jsonl.partial`` with a flush per event, so a killed run keeps
everything recorded so far; ``finish()`` fsyncs and renames it to ``events.jsonl``.

A write that fails (a full disk, a quota, an output directory that cannot be written) is
raised as ``OutputUnwritable``, naming the file: it is a fault of the machine, never a run
error of the cell. The atomic writers never leave their temporary file behind.

Every writer here scrubs what it writes of the secrets registered in the process
(:mod:`pytest_sabot.core.secrets`): an event's text and data before it is validated and
appended (so the trace in memory is the trace on disk), a JSON payload and a text before
they reach the disk. A copy of a file kept as it is (``write_bytes_atomic``) is not changed.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from pytest_sabot.core.errors import SabotDataError, from_validation_error
from pytest_sabot.core.loading import TOO_DEEP
from pytest_sabot.core.models.trace import Trace, TraceEvent
from pytest_sabot.core.secrets import (
    has_secret,
    known_secrets,
    scrub_bytes,
    scrub_name,
    scrub_text,
    scrub_value,
)

ModelT = TypeVar("ModelT", bound=BaseModel)

TRACE_FILE = "events.jsonl"
PARTIAL_SUFFIX = ".partial"
# Error texts of a failed write, as an OSError shows them once it became a string (an
# exception raised inside a framework reaches the harness as text).
_OUTPUT_ERROR_TEXTS = (
    "No space left on device",
    "Disk quota exceeded",
    "File too large",
    "Read-only file system",
)


class OutputUnwritable(OSError):
    """A record could not be written (disk full, quota, read-only or unwritable output)."""

    def __init__(self, path: str | Path, cause: BaseException) -> None:
        errno = getattr(cause, "errno", None)
        strerror = getattr(cause, "strerror", None) or str(cause)
        super().__init__(errno, strerror, str(path))
        self.path = str(path)
        self.cause = cause

    def __str__(self) -> str:
        return f"could not write {self.path}: {self.strerror}"


def every_trace(run_dir: Path) -> list[Path]:
    """A cell's final traces, every attempt's: the last attempt's and those of the
    attempts kept before it (``attempt-N/``, harness/run.py), where they exist."""
    found = [run_dir / TRACE_FILE, *sorted(run_dir.glob(f"attempt-*/{TRACE_FILE}"))]
    return [path for path in found if path.is_file()]


def looks_like_output_error(text: str) -> bool:
    """Whether an error text is a failed write of the machine (e.g. a full disk)."""
    return any(marker in text for marker in _OUTPUT_ERROR_TEXTS)

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
        self.failed: OutputUnwritable | None = None
        try:
            self._fh = self.partial_path.open("w", encoding="utf-8")
        except OSError as exc:
            raise OutputUnwritable(self.partial_path, exc) from exc

    @property
    def next_seq(self) -> int:
        with self._lock:
            return len(self._events)

    def _validated(self, kind: str, component: str, text: str, data: dict[str, Any]) -> Any:
        if known_secrets():
            text, data = scrub_text(text), scrub_value(data)
        raw = {
            "seq": len(self._events),
            "t": time.time(),
            "kind": kind,
            "component": component,
            "text": text,
            "data": data,
        }
        return _EVENT.validate_python(raw)

    def check(self, kind: str, component: str, text: str = "", **data: Any) -> None:
        """Validate one event as :meth:`emit` would, writing nothing (an event held back
        to be written later fails where it was given)."""
        with self._lock:
            self._validated(kind, component, text, data)

    def emit(self, kind: str, component: str, text: str = "", **data: Any) -> Any:
        """Validate and append one event; returns the validated event."""
        with self._lock:
            event = self._validated(kind, component, text, data)
            if self.failed is not None:
                raise self.failed
            try:
                self._fh.write(json.dumps(_EVENT.dump_python(event, mode="json")) + "\n")
                self._fh.flush()
            except OSError as exc:
                self.failed = OutputUnwritable(self.partial_path, exc)
                raise self.failed from exc
            self._events.append(event)
            return event

    def record(self, kind: str, component: str, text: str = "", **data: Any) -> Any:
        """:meth:`emit` for the harness's own kinds: what the run context's seams and the
        harness write (a run's trace refuses them from a pipeline, harness/run.py)."""
        return TraceWriter.emit(self, kind, component, text, **data)

    def events(self) -> list[Any]:
        with self._lock:
            return list(self._events)

    def finish(self) -> Path:
        """fsync, close and atomically publish the trace as events.jsonl."""
        with self._lock:
            if self.failed is not None:
                self.close()
                raise self.failed
            try:
                if not self._fh.closed:
                    self._fh.flush()
                    os.fsync(self._fh.fileno())
                    self._fh.close()
                os.replace(self.partial_path, self.final_path)
            except OSError as exc:
                self.failed = OutputUnwritable(self.final_path, exc)
                self.close()
                raise self.failed from exc
        return self.final_path

    def close(self) -> None:
        """Close the partial file without publishing it (a failed run keeps it as is)."""
        try:
            if not self._fh.closed:
                self._fh.close()
        except OSError:
            pass


def parse_events(lines: list[str], source: str | Path) -> Trace:
    """Parse JSONL lines into a validated Trace; errors name the file and the line.

    Each line is first parsed and validated in one step (pydantic's own JSON reading, the
    faster way); a line that does not pass is read again as ``json`` and the event model
    read it before, which either names what is wrong with it or accepts it (a line only
    ``json`` reads, e.g. one nested deeper than pydantic parses): a trace reads exactly as
    it did, only faster. The events, each validated already, are not validated again as a
    whole trace: only its shape is checked (``Trace.of_events``); an ill-formed trace is
    named as the model's own validation names it."""
    events = []
    read_line = _EVENT.validator.validate_json
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            events.append(read_line(line))
        except ValueError:  # a ValidationError: read it the way that names the problem
            events.append(_parse_line(line, number, source))
    try:
        return Trace.of_events(events)
    except ValueError:  # ill-formed: named the way the model's own validation names it
        try:
            Trace(events=events)
        except ValidationError as exc:
            raise from_validation_error(source, exc) from None
        raise


def _parse_line(line: str, number: int, source: str | Path) -> Any:
    """One line as ``json`` reads it and the event model validates it; anything else is a
    SabotDataError naming the file, the line (and field) and what was expected."""
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SabotDataError(
            source, f"line {number}", "one JSON object per line", str(exc)
        ) from None
    except RecursionError:
        raise SabotDataError(source, f"line {number}", TOO_DEEP, "deeper nesting") from None
    try:
        return _EVENT.validate_python(raw)
    except ValidationError as exc:
        err = from_validation_error(source, exc)
        # a problem of the whole event (an unknown kind) names the line alone
        where = f"line {number}.{err.field}" if err.field else f"line {number}"
        raise SabotDataError(source, where, err.expected, err.got) from None


def read_trace(path: Path) -> Trace:
    """Read events.jsonl (or a directory holding it; a .partial file is read too).

    A cell's trace is read several times once written (its record checked, scored, judged,
    its baseline's status read by each of its fault cells): the last few traces parsed are
    kept with the text they were parsed from, and a file whose text is the same is not
    parsed and validated again (it is always read)."""
    if path.is_dir():
        final = path / TRACE_FILE
        path = final if final.exists() else path / (TRACE_FILE + PARTIAL_SUFFIX)
    text = path.read_text(encoding="utf-8")
    kept = _PARSED.get(path, text)
    if kept is not None:
        return kept
    trace = parse_events(text.splitlines(), path)
    _PARSED.put(path, text, trace)
    return trace


class _ParsedTraces:
    """The last :attr:`KEEP` traces parsed, each with its file's text."""

    KEEP = 32

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, tuple[str, Trace]] = OrderedDict()

    def get(self, path: Path, text: str) -> Trace | None:
        with self._lock:
            kept = self._kept.get(str(path))
            if kept is None or kept[0] != text:
                return None
            self._kept.move_to_end(str(path))
            return kept[1]

    def put(self, path: Path, text: str, trace: Trace) -> None:
        with self._lock:
            self._kept[str(path)] = (text, trace)
            self._kept.move_to_end(str(path))
            while len(self._kept) > self.KEEP:
                self._kept.popitem(last=False)


_PARSED = _ParsedTraces()


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON via a temp file, fsync and os.replace, so a kill leaves the old file."""
    text = json.dumps(scrub_value(payload), indent=2, sort_keys=True) + "\n"
    write_text_atomic(path, text)


def write_record_atomic(path: Path, record: BaseModel) -> None:
    """:func:`write_json_atomic` of a record as its model dumps it to JSON."""
    write_json_atomic(path, record.model_dump(mode="json"))


def read_record_if_present(path: Path, model: type[ModelT]) -> ModelT | None:
    """The record at ``path`` as ``model`` validates it, or None when there is no file."""
    if not path.is_file():
        return None
    return model.model_validate_json(path.read_text(encoding="utf-8"))


def write_text_atomic(path: Path, text: str) -> None:
    """Write a file via a temp file, fsync and os.replace. On any failure (a full disk, an
    interrupt) the temp file is removed and the previous file is left as it was; a failed
    write is raised as OutputUnwritable. The text is scrubbed of known secrets."""
    write_bytes_atomic(path, scrub_text(text).encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """:func:`write_text_atomic` for bytes (a copy of a file, kept as it is)."""
    tmp = path.with_name(path.name + f".tmp{os.getpid()}-{threading.get_ident()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _discard(tmp)
        raise OutputUnwritable(path, exc) from exc
    except BaseException:
        _discard(tmp)
        raise


def scrub_tree(root: Path) -> list[Path]:
    """Every file under ``root`` rewritten without the secrets this process knows, where it
    held one, and every file or folder whose name held one renamed (``REDACTED`` in its
    place); returns the paths changed, as they are now. The harness's own writers scrub
    what they write; this is for what a pipeline wrote itself into its cell's directory
    (``ctx.run_dir``), which no writer of ours saw. A symlink is not followed: it is a
    record of where it pointed (a link named after a secret is renamed all the same)."""
    if not known_secrets() or not root.is_dir():
        return []
    changed: list[Path] = []
    # Deepest first, so a folder is renamed after everything in it was dealt with.
    for path in sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_file() and not path.is_symlink():
            try:
                data = path.read_bytes()
            except OSError:
                continue
            clean = scrub_bytes(data)
            if clean != data:
                write_bytes_atomic(path, clean)
                changed.append(path)
        if has_secret(path.name):
            renamed = path.with_name(_free_name(path))
            with contextlib.suppress(OSError):
                path.rename(renamed)
                changed = [renamed if c == path else c for c in changed]
                if renamed not in changed:
                    changed.append(renamed)
    return sorted(changed)


def _free_name(path: Path) -> str:
    """``path``'s name without its secrets, not taken by another entry beside it."""
    base = scrub_name(path.name)
    name, n = base, 1
    while (path.parent / name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


def _discard(tmp: Path) -> None:
    with contextlib.suppress(OSError):
        tmp.unlink()
