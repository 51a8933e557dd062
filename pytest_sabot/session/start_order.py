"""The order a session's cells start in: the longest recorded first (SPEC I163).

A pipeline makes its model calls one after the other, so a cell that makes 64 of them
takes 64 latencies however many connections the provider allows. Started last, it is the
only cell left for most of a minute while every other connection idles. Which cell runs
that long is the model's doing and is not known before a run; it is known after one.
So each session leaves, in pytest's cache (``.pytest_cache``, beside ``--lf``'s list),
how many model calls every cell it counted made, by wave and model; the next session of
the same wave and model starts the fault cells with the most calls first. Baselines still
come first, the baseline of the longest fault cells first among them (a fault cell waits
for its baseline). A cell the cache does not know counts as the median of the ones it
does.

The order is the only thing this changes: every record, verdict and test id is the same
in any order (SPEC I126). ``-p no:cacheprovider`` or ``--cache-clear`` leaves the order
as collected.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_sabot.core.models.cells import Cell

CACHE_KEY = "sabot/model-calls"
# The tables (a wave and a model each) the cache keeps at most, the most recently written.
TABLES_KEPT = 8


def table_name(wave: int | str, model: str) -> str:
    """The cache's table of one wave's cells under one model spec."""
    return f"wave {wave} {model}"


def longest_first(cells: Sequence[Cell], calls: Mapping[str, int]) -> list[Cell]:
    """``cells`` in the order to start them: baselines first, each group by the calls
    recorded (most first), the collected order among equals. Unchanged when nothing is
    recorded for any of them."""
    known = [calls[c.id] for c in cells if c.id in calls]
    if not known:
        return list(cells)
    typical = statistics.median(known)

    def expected(cell: Cell) -> float:
        return float(calls.get(cell.id, typical))

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


def recorded_calls(cache: Any, name: str) -> dict[str, int]:
    """The calls per cell the cache's table ``name`` holds ({} without a cache, or with
    anything in it that is not such a table)."""
    if cache is None:
        return {}
    stored = cache.get(CACHE_KEY, None)
    table = stored.get(name) if isinstance(stored, dict) else None
    if not isinstance(table, dict):
        return {}
    return {
        str(cell_id): n for cell_id, n in table.items()
        if isinstance(n, int) and not isinstance(n, bool) and n >= 0
    }


def remember_calls(cache: Any, name: str, counted: Mapping[str, int]) -> None:
    """Add this session's counts to the cache's table ``name`` (later counts replace
    earlier ones; the other cells' stay). Nothing without a cache or without counts."""
    if cache is None or not counted:
        return
    stored = cache.get(CACHE_KEY, None)
    tables: dict[str, Any] = dict(stored) if isinstance(stored, dict) else {}
    table = tables.pop(name, None)
    merged = dict(table) if isinstance(table, dict) else {}
    merged.update(counted)
    tables[name] = dict(sorted(merged.items()))
    # Insertion order is recency: the oldest tables go first when there are too many.
    kept = list(tables.items())[-TABLES_KEPT:]
    cache.set(CACHE_KEY, dict(kept))
