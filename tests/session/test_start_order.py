"""SPEC I163: the order a session's cells start in goes by the model calls earlier
sessions of the same model recorded, longest first, baselines first."""

from __future__ import annotations

from typing import Any

from pytest_sabot.core.models.cells import Cell
from pytest_sabot.matrix.standard import load_standard
from pytest_sabot.session.start_order import (
    CACHE_KEY,
    TABLES_KEPT,
    longest_first,
    recorded_calls,
    remember_calls,
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


def test_I163_the_fault_cells_recorded_with_the_most_calls_start_first() -> None:
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
    remember_calls(cache, sim, {"a": 7, "b": 3})
    remember_calls(cache, live, {"a": 12})
    remember_calls(cache, sim, {"b": 9, "c": 1})
    assert recorded_calls(cache, sim) == {"a": 7, "b": 9, "c": 1}
    assert recorded_calls(cache, live) == {"a": 12}
    assert recorded_calls(cache, other_wave) == {}, "the same cell id in another wave"
    assert list(cache.data) == [CACHE_KEY]


def test_I163_no_cache_or_nothing_counted_writes_nothing() -> None:
    remember_calls(None, "sim:realistic", {"a": 1})
    cache = FakeCache()
    remember_calls(cache, "sim:realistic", {})
    assert cache.data == {}
    assert recorded_calls(None, "sim:realistic") == {}


def test_I163_a_cache_entry_that_is_not_a_table_of_counts_is_not_read() -> None:
    assert recorded_calls(FakeCache({CACHE_KEY: ["not", "a", "table"]}), "m") == {}
    assert recorded_calls(FakeCache({CACHE_KEY: {"m": "seven"}}), "m") == {}
    table = {"m": {"a": 3, "b": "many", "c": -1, "d": True, "e": 2.5}}
    assert recorded_calls(FakeCache({CACHE_KEY: table}), "m") == {"a": 3}
    cache = FakeCache({CACHE_KEY: "garbage"})
    remember_calls(cache, "m", {"a": 1})
    assert cache.data[CACHE_KEY] == {"m": {"a": 1}}


def test_I163_the_cache_keeps_the_most_recent_tables_only() -> None:
    cache = FakeCache()
    for i in range(TABLES_KEPT + 2):
        remember_calls(cache, f"model-{i}", {"a": i + 1})
    kept = cache.data[CACHE_KEY]
    assert list(kept) == [f"model-{i}" for i in range(2, TABLES_KEPT + 2)]
    remember_calls(cache, "model-2", {"b": 1})
    assert list(cache.data[CACHE_KEY])[-1] == "model-2", "a model written again is recent"
