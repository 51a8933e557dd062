"""Replay of recorded exchanges (``replay:<dir>``): no model, no network.

A call is matched by (cell id, agent, call index) and must carry the same request hash;
anything else is an error that names the cell, the agent, the call index and the first
part of the request that differs. It never serves a different exchange.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.gateway.backends.base import (
    BackendError,
    BackendHost,
    BackendReply,
    CallContext,
)
from pytest_sabot.gateway.protocol import RecordedExchange, Usage, request_hash
from pytest_sabot.gateway.recording import read_recording


def first_difference(recorded: Any, actual: Any, path: str = "") -> str | None:
    """The dotted path of the first difference between two JSON values, or None."""
    if isinstance(recorded, dict) and isinstance(actual, dict):
        for key in sorted(set(recorded) | set(actual)):
            where = f"{path}.{key}" if path else str(key)
            if key not in actual:
                return f"{where} (recorded, missing now)"
            if key not in recorded:
                return f"{where} (new, not recorded)"
            found = first_difference(recorded[key], actual[key], where)
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(actual, list):
        for i, (a, b) in enumerate(zip(recorded, actual, strict=False)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        if len(recorded) != len(actual):
            return f"{path} (length {len(recorded)} recorded, {len(actual)} now)"
        return None
    if recorded != actual:
        if isinstance(recorded, str) and isinstance(actual, str):
            return f"{path or '<root>'} ({text_difference(recorded, actual)})"
        shown = json.dumps(actual, ensure_ascii=False)
        return f"{path or '<root>'} (now {shown[:80]})"
    return None


def text_difference(recorded: str, actual: str, context: int = 30) -> str:
    """Where two texts first part and what each says there (a short excerpt of both)."""
    at = next(
        (i for i, (a, b) in enumerate(zip(recorded, actual, strict=False)) if a != b),
        min(len(recorded), len(actual)),
    )
    start = max(0, at - context)

    def excerpt(text: str) -> str:
        piece = text[start : at + context]
        return json.dumps(("..." if start else "") + piece, ensure_ascii=False)

    return f"first differs at character {at}: recorded {excerpt(recorded)}, now {excerpt(actual)}"


def replay_backend(host: BackendHost) -> ReplayBackends:
    """The registry's factory of ``replay:<dir>``: a relative directory is read from the
    gateway's working directory (its settings' ``workdir``, else the process's)."""
    return ReplayBackends(host.settings.workdir)


class ReplayBackends:
    """``replay:<dir>`` for every directory: one :class:`ReplayBackend` per recordings
    directory, made when a run first names it."""

    replays = True

    def __init__(self, workdir: Path | None = None) -> None:
        self.workdir = workdir
        self._lock = threading.Lock()
        self._roots: dict[str, ReplayBackend] = {}

    def directory(self, name: str) -> Path:
        """The recordings directory a spec names (relative ones from ``workdir``)."""
        path = Path(name)
        return self.workdir / path if self.workdir is not None and not path.is_absolute() else path

    def check(self, name: str) -> None:
        if not self.directory(name).is_dir():
            raise BackendError(
                400, f"replay directory {name!r} does not exist", "sabot_replay_missing"
            )

    def complete(self, request: dict[str, Any], call: CallContext) -> BackendReply:
        with self._lock:
            if call.name not in self._roots:
                self._roots[call.name] = ReplayBackend(self.directory(call.name))
            backend = self._roots[call.name]
        return backend.complete(request, call)


class ReplayBackend:
    """The recordings of one directory."""

    replays = True

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._cells: dict[str, dict[tuple[str, int], RecordedExchange]] = {}

    def _cell(self, cell_id: str) -> dict[tuple[str, int], RecordedExchange]:
        with self._lock:
            if cell_id not in self._cells:
                try:
                    rows = read_recording(self.root, cell_id)
                except SabotDataError as exc:
                    raise BackendError(
                        404, f"replay: cell {cell_id}: {exc}", "sabot_replay_missing"
                    ) from exc
                self._cells[cell_id] = {(r.record.agent, r.record.call_index): r for r in rows}
            return self._cells[cell_id]

    def complete(self, request: dict[str, Any], call: CallContext) -> BackendReply:
        cell = self._cell(call.cell_id)
        where = f"replay: cell {call.cell_id}, agent {call.agent}, call index {call.call_index}"
        row = cell.get((call.agent, call.call_index))
        if row is None:
            count = sum(1 for agent, _ in cell if agent == call.agent)
            raise BackendError(
                409,
                f"{where}: no recorded exchange (the recording has {count} calls of this agent)",
                "sabot_replay_mismatch",
            )
        if request_hash(request) != row.record.request_hash:
            differs = first_difference(row.request, request) or "request hash"
            raise BackendError(
                409,
                f"{where}: the request differs from the recording at {differs}",
                "sabot_replay_mismatch",
            )
        if row.response is None:
            raise BackendError(
                row.error_status or 500,
                row.record.error or "recorded error",
                "sabot_replayed_error",
                body=row.error_body,
            )
        rec = row.record
        usage = Usage(
            prompt_tokens=rec.prompt_tokens,
            completion_tokens=rec.completion_tokens,
            cached_tokens=rec.cached_tokens,
            reasoning_tokens=rec.reasoning_tokens,
        )
        return BackendReply(
            response=row.response,
            usage=usage,
            cost_usd=0.0,
            model_served=rec.model_served,
            downgraded=rec.downgraded,
        )
