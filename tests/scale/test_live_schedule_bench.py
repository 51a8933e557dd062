"""bench/live_schedule.py replays recorded cells as chains of calls on a number of
connections: a fault cell that waits for its baseline, a width, and who gets a free
connection each change the span the way a schedule would."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from bench_modules import load_bench


def _bench() -> ModuleType:
    return load_bench("live_schedule")


BENCH = _bench()


def _chain(cell_id: str, baseline: str | None, *calls: float) -> Any:
    segments = [(False, 0.0)]
    for seconds in calls:
        segments += [(True, seconds), (False, 0.0)]
    return BENCH.Chain(cell_id, baseline, segments)


def _schedule(*, width: int | None = None, gate: bool = False, most_work: bool = False) -> Any:
    return BENCH.Schedule("t", width, lambda c: 0.0, most_work, gate)


def test_a_fault_cell_gated_on_its_baseline_starts_when_the_baseline_ends() -> None:
    chains = [_chain("b", None, 2.0), _chain("f", "b", 2.0)]
    assert BENCH.replay(chains, _schedule(gate=True), connections=2) == 4.0
    assert BENCH.replay(chains, _schedule(), connections=2) == 2.0


def test_cells_in_flight_share_the_connections_and_the_width_bounds_them() -> None:
    chains = [_chain(f"c{i}", None, 1.0, 1.0) for i in range(4)]
    assert BENCH.replay(chains, _schedule(), connections=4) == 2.0
    assert BENCH.replay(chains, _schedule(), connections=2) == 4.0
    assert BENCH.replay(chains, _schedule(width=1), connections=4) == 8.0


def test_the_cell_with_the_most_work_left_gets_the_free_connection_first() -> None:
    # Two connections, a cell of three calls and three of one. First come: at 1 s the two
    # short cells waiting are served before the long cell's second call, which then ends
    # at 4 s; most work first serves the long cell at once and the span is its chain, 3 s.
    chains = [_chain("short1", None, 1.0), _chain("long", None, 1.0, 1.0, 1.0),
              _chain("short2", None, 1.0), _chain("short3", None, 1.0)]
    assert BENCH.replay(chains, _schedule(), connections=2) == 4.0
    assert BENCH.replay(chains, _schedule(most_work=True), connections=2) == 3.0
