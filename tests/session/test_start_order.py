"""SPEC I163: the order a session's cells start in goes by how long each cell ran in
earlier sessions of the same wave and model, longest first, baselines first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_sabot.core.models.cells import Cell
from pytest_sabot.matrix.standard import load_standard
from pytest_sabot.session.start_order import (
    CACHE_KEY,
    TABLES_KEPT,
    longest_first,
    recorded_seconds,
    remember_seconds,
    run_seconds,
    table_name,
)


def _slice() -> list[Cell]:
    """LangGraph default, T1 and T2, seed 11: two baselines and twelve fault cells, in the
    wave's order (baselines first)."""
    std = load_standard("1")
    return [
        c for c in std.cells
        if c.framework == "langgraph" and c.config == "default" and c.seed == 11
        and c.task in ("T1", "T2")
    ]


class FakeCache:
    """pytest's Cache as the plugin uses it: JSON values by key."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self.data: dict[str, Any] = dict(data or {})

    def get(self, key: str, default: Any) -> Any:
        return self.data.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.data[key] = value


def test_I163_nothing_recorded_keeps_the_collected_order() -> None:
    cells = _slice()
    assert longest_first(cells, {}) == cells
    assert longest_first(cells, {"some-other-wave-cell": 9}) == cells


def test_I163_the_fault_cells_that_ran_longest_start_first() -> None:
    cells = _slice()
    faults = [c for c in cells if not c.is_baseline]
    calls = {c.id: 5 for c in cells}
    calls[faults[-1].id] = 64
    calls[faults[3].id] = 10
    ordered = longest_first(cells, calls)
    assert sorted(c.id for c in ordered) == sorted(c.id for c in cells)
    baselines = [c for c in ordered if c.is_baseline]
    assert ordered[: len(baselines)] == baselines, "baselines still come first"
    rest = ordered[len(baselines):]
    assert [rest[0].id, rest[1].id] == [faults[-1].id, faults[3].id]
    assert rest[2:] == [c for c in faults if c.id not in (faults[-1].id, faults[3].id)], (
        "equals keep the collected order"
    )


def test_I163_the_baseline_of_the_longest_fault_cell_starts_first() -> None:
    cells = _slice()
    t2 = next(c for c in cells if c.task == "T2" and not c.is_baseline)
    calls = {c.id: 5 for c in cells}
    calls[t2.id] = 64
    ordered = longest_first(cells, calls)
    assert ordered[0].id == t2.baseline_id
    assert cells[0].id != t2.baseline_id, "the wave's own order had it second"


def test_I163_a_cell_nothing_was_recorded_for_counts_as_the_median() -> None:
    cells = _slice()
    faults = [c for c in cells if not c.is_baseline]
    # Eleven fault cells recorded, their median 5; the twelfth is new.
    counts = [30, 20, 10, 8, 6, 5, 4, 3, 2, 1, 1]
    calls = {c.id: n for c, n in zip(faults[:-1], counts, strict=True)}
    new = faults[-1]
    ordered = [c for c in longest_first(cells, calls) if not c.is_baseline]
    assert [calls.get(c.id, "new") for c in ordered] == [30, 20, 10, 8, 6, 5, "new", 4, 3,
                                                         2, 1, 1]
    assert ordered[6] == new


def test_I163_the_cache_keeps_each_wave_and_models_counts_apart_and_adds_to_them() -> None:
    cache = FakeCache()
    sim, live, other_wave = (table_name(1, "sim:realistic"), table_name(1, "openai:gpt-x"),
                             table_name(2, "sim:realistic"))
    remember_seconds(cache, sim, {"a": 7, "b": 3})
    remember_seconds(cache, live, {"a": 12})
    remember_seconds(cache, sim, {"b": 9, "c": 1})
    assert recorded_seconds(cache, sim) == {"a": 7, "b": 9, "c": 1}
    assert recorded_seconds(cache, live) == {"a": 12}
    assert recorded_seconds(cache, other_wave) == {}, "the same cell id in another wave"
    assert list(cache.data) == [CACHE_KEY]


def test_I163_no_cache_or_nothing_counted_writes_nothing() -> None:
    remember_seconds(None, "sim:realistic", {"a": 1})
    cache = FakeCache()
    remember_seconds(cache, "sim:realistic", {})
    assert cache.data == {}
    assert recorded_seconds(None, "sim:realistic") == {}


def test_I163_a_cache_entry_that_is_not_a_table_of_times_is_not_read() -> None:
    assert recorded_seconds(FakeCache({CACHE_KEY: ["not", "a", "table"]}), "m") == {}
    assert recorded_seconds(FakeCache({CACHE_KEY: {"m": "seven"}}), "m") == {}
    table = {"m": {"a": 3, "b": "many", "c": -1, "d": True, "e": 2.5, "f": float("inf"),
                   "g": float("nan"), "h": None}}
    assert recorded_seconds(FakeCache({CACHE_KEY: table}), "m") == {"a": 3.0, "e": 2.5}
    cache = FakeCache({CACHE_KEY: "garbage"})
    remember_seconds(cache, "m", {"a": 1})
    assert cache.data[CACHE_KEY] == {"m": {"a": 1}}


def test_I163_the_cache_keeps_the_most_recent_tables_only() -> None:
    cache = FakeCache()
    for i in range(TABLES_KEPT + 2):
        remember_seconds(cache, f"model-{i}", {"a": i + 1})
    kept = cache.data[CACHE_KEY]
    assert list(kept) == [f"model-{i}" for i in range(2, TABLES_KEPT + 2)]
    remember_seconds(cache, "model-2", {"b": 1})
    assert list(cache.data[CACHE_KEY])[-1] == "model-2", "a model written again is recent"


def _trace(path: Path, times: list[float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"seq": i, "t": t, "kind": "x"}) + "\n"
                            for i, t in enumerate(times)), "utf-8")


def test_I163_a_run_lasts_from_each_traces_first_event_to_its_last_every_attempt(
    tmp_path: Path,
) -> None:
    run = tmp_path / "cell"
    assert run_seconds(run) == 0.0, "no trace, no time"
    _trace(run / "events.jsonl", [100.0, 100.5, 103.25])
    assert run_seconds(run) == 3.25
    _trace(run / "attempt-1" / "events.jsonl", [50.0, 51.5])
    assert run_seconds(run) == 4.75, "the attempts before the last ran too"
    (run / "attempt-2").mkdir()
    (run / "attempt-2" / "events.jsonl").write_text('{"t": 1}\n{"seq": 9, "t": "late"',
                                                     "utf-8")
    assert run_seconds(run) == 4.75, "a damaged trace tells no time"
