"""The order a session's cells start in: the longest recorded first (SPEC I163).

A pipeline makes its model calls one after the other and waits on its tools, so no
connection budget shortens a cell: one whose agents loop until the runaway guard stops
them (64 calls) takes 64 latencies, one whose tool hangs waits out its time limit, and
started last either is the only cell left for most of a minute. Which cell does that is the
model's or the fault's doing and is not known before a run; it is known after one.
So each session leaves, in pytest's cache (``.pytest_cache``, beside ``--lf``'s list),
how long every cell it counted ran, by wave and model; the next session of the same wave
and model starts the fault cells that ran longest first. Baselines still come first, the
baseline of the longest fault cells first among them (a fault cell waits for its
baseline). A cell the cache does not know counts as the median of the ones it does.

The order is the only thing this changes: every record, verdict and test id is the same
in any order (SPEC I126). ``-p no:cacheprovider`` or ``--cache-clear`` leaves the order
as collected.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.trace_io import every_trace

CACHE_KEY = "sabot/cell-seconds"
# The tables (a wave and a model each) the cache keeps at most, the most recently written.
TABLES_KEPT = 8


def table_name(wave: int | str, model: str) -> str:
    """The cache's table of one wave's cells under one model spec."""
    return f"wave {wave} {model}"


def longest_first(cells: Sequence[Cell], seconds: Mapping[str, float]) -> list[Cell]:
    """``cells`` in the order to start them: baselines first, each group by the time
    recorded (longest first), the collected order among equals. Unchanged when nothing is
    recorded for any of them."""
    known = [seconds[c.id] for c in cells if c.id in seconds]
    if not known:
        return list(cells)
    typical = statistics.median(known)

    def expected(cell: Cell) -> float:
        return float(seconds.get(cell.id, typical))

    chain: dict[str, float] = {}
    for cell in cells:
        if not cell.is_baseline:
            chain[cell.baseline_id] = max(chain.get(cell.baseline_id, 0.0), expected(cell))

    def key(indexed: tuple[int, Cell]) -> tuple[int, float, int]:
        index, cell = indexed
        if cell.is_baseline:
            return 0, -(expected(cell) + chain.get(cell.id, 0.0)), index
        return 1, -expected(cell), index

    return [cell for _, cell in sorted(enumerate(cells), key=key)]


def run_seconds(run_dir: Path) -> float:
    """How long a cell's run took, every attempt's: from the first event of each trace to
    its last (0.0 for a cell with no trace). Only the first and last lines are parsed."""
    total = 0.0
    for trace in every_trace(run_dir):
        lines = [line for line in trace.read_text("utf-8", errors="replace").splitlines()
                 if line.strip()]
        try:
            first, last = json.loads(lines[0])["t"], json.loads(lines[-1])["t"]
            total += max(0.0, float(last) - float(first))
        except (IndexError, KeyError, TypeError, ValueError):
            continue  # a damaged trace tells no time; its record says why elsewhere
    return round(total, 3)


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def recorded_seconds(cache: Any, name: str) -> dict[str, float]:
    """The seconds per cell the cache's table ``name`` holds ({} without a cache; an entry
    that is not a table of times, or a time that is not a number of seconds, is not
    read)."""
    if cache is None:
        return {}
    stored = cache.get(CACHE_KEY, None)
    table = stored.get(name) if isinstance(stored, dict) else None
    if not isinstance(table, dict):
        return {}
    read = {str(cell_id): _seconds(value) for cell_id, value in table.items()}
    return {cell_id: value for cell_id, value in read.items() if value is not None}


def remember_seconds(cache: Any, name: str, measured: Mapping[str, float]) -> None:
    """Add this session's times to the cache's table ``name`` (later times replace earlier
    ones; the other cells' stay). Nothing without a cache or without times."""
    if cache is None or not measured:
        return
    stored = cache.get(CACHE_KEY, None)
    tables: dict[str, Any] = dict(stored) if isinstance(stored, dict) else {}
    table = tables.pop(name, None)
    merged = dict(table) if isinstance(table, dict) else {}
    merged.update(measured)
    tables[name] = dict(sorted(merged.items()))
    # Insertion order is recency: the oldest tables go first when there are too many.
    kept = list(tables.items())[-TABLES_KEPT:]
    cache.set(CACHE_KEY, dict(kept))
