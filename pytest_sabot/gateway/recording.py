"""Per-cell recordings of live exchanges: <record_dir>/<cell_id>/exchanges.jsonl.

A run appends to ``exchanges.jsonl.partial`` with a flush per exchange; closing the run
fsyncs and renames it, so a retried attempt of the cell replaces the earlier one and a
killed run keeps what it recorded. Every line is a RecordedExchange with secrets scrubbed.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from pytest_sabot.core.errors import SabotDataError, from_validation_error
from pytest_sabot.gateway.protocol import RecordedExchange

EXCHANGES_FILE = "exchanges.jsonl"
PARTIAL_SUFFIX = ".partial"


def cell_dir(root: Path, cell_id: str) -> Path:
    if not cell_id or "/" in cell_id or "\\" in cell_id or cell_id in (".", ".."):
        raise SabotDataError(root, "cell_id", "a cell id usable as a folder name", cell_id)
    return root / cell_id


class Recorder:
    """Open recordings keyed by run; one file per cell."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._open: dict[str, tuple[Path, IO[str]]] = {}

    def open_run(self, run_key: str, cell_id: str) -> None:
        directory = cell_dir(self.root, cell_id)
        directory.mkdir(parents=True, exist_ok=True)
        partial = directory / (EXCHANGES_FILE + PARTIAL_SUFFIX)
        with self._lock:
            self._close_locked(run_key)
            self._open[run_key] = (directory, partial.open("w", encoding="utf-8"))

    def append(self, run_key: str, exchange: RecordedExchange) -> None:
        line = json.dumps(exchange.model_dump(mode="json"), ensure_ascii=False)
        with self._lock:
            entry = self._open.get(run_key)
            if entry is None:
                return
            entry[1].write(line + "\n")
            entry[1].flush()

    def close_run(self, run_key: str) -> None:
        with self._lock:
            self._close_locked(run_key)

    def close_all(self) -> None:
        with self._lock:
            for key in list(self._open):
                self._close_locked(key)

    def _close_locked(self, run_key: str) -> None:
        entry = self._open.pop(run_key, None)
        if entry is None:
            return
        directory, fh = entry
        fh.flush()
        os.fsync(fh.fileno())
        fh.close()
        os.replace(directory / (EXCHANGES_FILE + PARTIAL_SUFFIX), directory / EXCHANGES_FILE)


def read_recording(root: Path, cell_id: str) -> list[RecordedExchange]:
    """Read a cell's recording (the finished file, else the partial one)."""
    directory = cell_dir(root, cell_id)
    path = directory / EXCHANGES_FILE
    if not path.exists():
        path = directory / (EXCHANGES_FILE + PARTIAL_SUFFIX)
    if not path.exists():
        raise SabotDataError(directory, EXCHANGES_FILE, "a recording of this cell")
    out: list[RecordedExchange] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(RecordedExchange.model_validate_json(line))
        except ValidationError as exc:
            err = from_validation_error(path, exc)
            raise SabotDataError(path, f"line {number}.{err.field}", err.expected, err.got) from exc
    return out
