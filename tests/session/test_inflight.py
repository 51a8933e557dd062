"""Several cells in flight per process (session/inflight.py): the rules that keep every
cell's record what a run one cell at a time makes, checked on the pool's scheduling with
a run function that records when each cell ran (the real sessions are in
test_concurrency_sessions.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from pytest_sabot.core.models.cells import Cell
from pytest_sabot.matrix.standard import Standard, load_standard
from pytest_sabot.session.inflight import CellPool, choose, not_started, queue_depth, widest


@pytest.fixture(scope="module")
def wave1() -> Standard:
    return load_standard(1)


def _cells(std: Standard, framework: str, task: str = "T1", seed: int = 11) -> list[Cell]:
    return [
        c for c in std.cells
        if c.framework == framework and c.config == "default" and c.task == task
        and c.seed == seed and not c.carved_out
    ]


class Recorder:
    """A run function: each cell takes ``seconds``, and what overlapped is kept."""

    def __init__(self, seconds: float = 0.05, fail: str | None = None) -> None:
        self.seconds = seconds
        self.fail = fail
        self.lock = threading.Lock()
        self.running: list[Cell] = []
        self.overlaps: list[tuple[str, ...]] = []
        self.started: list[str] = []
        self.peak = 0

    def __call__(self, cell: Cell) -> dict[str, Any]:
        with self.lock:
            self.started.append(cell.id)
            self.running.append(cell)
            self.overlaps.append(tuple(c.id for c in self.running))
            self.peak = max(self.peak, len(self.running))
        time.sleep(self.seconds)
        with self.lock:
            self.running.remove(cell)
        if cell.id == self.fail:
            raise OSError(f"{cell.id} failed")
        return {"cell_id": cell.id}


def _drive(pool: CellPool, cells: list[Cell], ahead: int) -> list[str]:
    """What pytest does: ask for each cell's result in order, naming the ones after it."""
    got = []
    for i, cell in enumerate(cells):
        got.append(pool.result(cell, cells[i + 1 : i + 1 + ahead])["cell_id"])
    return got


def test_I161_each_test_gets_its_own_cells_result_in_order_with_width_cells_in_flight(
    wave1: Standard,
) -> None:
    cells = _cells(wave1, "langgraph") + _cells(wave1, "autogen") + _cells(wave1, "langgraph",
                                                                             seed=12)
    run = Recorder()
    pool = CellPool(run, 4)
    assert _drive(pool, cells, 4) == [c.id for c in cells]
    assert sorted(run.started) == sorted(c.id for c in cells)  # each ran once
    assert run.peak == 4 and pool.peak == 4


def test_I161_a_fault_cell_never_starts_before_its_baseline_here_has_ended(
    wave1: Standard,
) -> None:
    cells = _cells(wave1, "langgraph") + _cells(wave1, "langgraph", seed=12)
    run = Recorder()
    _drive(CellPool(run, 6), cells, 6)
    order = run.started
    for cell in cells:
        if cell.operator is not None:
            assert order.index(cell.baseline_id) < order.index(cell.id)
            assert not any(cell.id in o and cell.baseline_id in o for o in run.overlaps), cell.id


def test_I161_a_fault_cell_before_its_baseline_ends_before_the_baseline_starts(
    wave1: Standard,
) -> None:
    """Tests in another order (a fault cell first) keep that order against its baseline:
    the fault cell reads the baseline pending, as in the sequential run."""
    cells = _cells(wave1, "langgraph")
    assert cells[0].operator is None
    reordered = [*cells[1:3], cells[0], *cells[3:]]  # two fault cells, then the baseline
    run = Recorder()
    _drive(CellPool(run, 6), reordered, 6)
    order = run.started
    assert order.index(cells[1].id) < order.index(cells[0].id)
    assert order.index(cells[2].id) < order.index(cells[0].id)
    for overlap in run.overlaps:
        assert not (cells[0].id in overlap and (cells[1].id in overlap or cells[2].id in overlap))
    for later in cells[3:]:  # the ones after the baseline wait for it
        assert order.index(cells[0].id) < order.index(later.id)


def test_I161_a_one_run_at_a_time_framework_never_overlaps_itself(wave1: Standard) -> None:
    cells = [c for pair in zip(_cells(wave1, "crewai"), _cells(wave1, "langgraph"), strict=True)
             for c in pair]
    run = Recorder()
    _drive(CellPool(run, 4, alone=frozenset({"crewai"})), cells, 4)
    for overlap in run.overlaps:
        assert sum(cid.startswith("crewai-") for cid in overlap) <= 1, overlap
    assert run.peak >= 2  # the other framework filled the room


class Importer:
    """A ``prepare``: importing a framework takes ``seconds``; when each import ran, and
    which cells ran meanwhile, is kept."""

    def __init__(self, run: Recorder, seconds: float = 0.15) -> None:
        self.run = run
        self.seconds = seconds
        self.windows: dict[str, tuple[float, float]] = {}
        self.beside: dict[str, set[str]] = {}
        self.active = 0
        self.most_at_once = 0

    def __call__(self, framework: str) -> None:
        with self.run.lock:
            self.active += 1
            self.most_at_once = max(self.most_at_once, self.active)
            self.beside[framework] = {c.id for c in self.run.running}
        started = time.monotonic()
        time.sleep(self.seconds / 2)
        with self.run.lock:
            self.beside[framework] |= {c.id for c in self.run.running}
        time.sleep(self.seconds / 2)
        with self.run.lock:
            self.active -= 1
        self.windows[framework] = (started, time.monotonic())


class TimedRecorder(Recorder):
    """A Recorder that also keeps when each cell started."""

    def __init__(self, seconds: float = 0.2) -> None:
        super().__init__(seconds)
        self.start_times: dict[str, float] = {}

    def __call__(self, cell: Cell) -> dict[str, Any]:
        self.start_times[cell.id] = time.monotonic()
        return super().__call__(cell)


def test_I126_a_frameworks_cells_start_once_it_is_imported_one_import_at_a_time(
    wave1: Standard,
) -> None:
    """The warm-up: no cell of a framework starts before its import has returned, two
    imports never run at once, and a framework's import runs beside the cells of one
    already imported (its first cell no longer runs alone)."""
    cells = _cells(wave1, "langgraph") + _cells(wave1, "autogen") + _cells(wave1, "crewai")
    run = TimedRecorder()
    imports = Importer(run)
    pool = CellPool(run, 6, alone=frozenset({"crewai"}), prepare=imports)
    assert _drive(pool, cells, 12) == [c.id for c in cells]
    assert set(imports.windows) == {"langgraph", "autogen", "crewai"}
    assert imports.most_at_once == 1
    for cell in cells:
        assert run.start_times[cell.id] >= imports.windows[cell.framework][1], cell.id
    assert any(cid.startswith("langgraph-") for cid in imports.beside["autogen"])
    first = {fw: next(c.id for c in cells if c.framework == fw) for fw in ("langgraph", "autogen")}
    assert any(len(o) > 1 for o in run.overlaps if first["autogen"] in o)
    assert run.peak >= 4


def test_I161_a_cells_error_is_raised_in_its_own_test_only(wave1: Standard) -> None:
    cells = _cells(wave1, "langgraph")
    bad = cells[3].id
    pool = CellPool(Recorder(fail=bad), 4)
    for i, cell in enumerate(cells):
        if cell.id == bad:
            with pytest.raises(OSError, match=f"{bad} failed"):
                pool.result(cell, cells[i + 1 :])
        else:
            assert pool.result(cell, cells[i + 1 :])["cell_id"] == cell.id


def test_I161_nothing_starts_ahead_once_the_session_stops(wave1: Standard) -> None:
    cells = _cells(wave1, "langgraph") + _cells(wave1, "langgraph", seed=12)
    stopped = threading.Event()
    run = Recorder()
    pool = CellPool(run, 3, may_start=lambda: not stopped.is_set())
    pool.result(cells[0], cells[1:])
    stopped.set()
    started = set(run.started)
    assert pool.stop(wait_s=5) == 0
    assert set(run.started) == started  # nothing more started
    queued = [c for c in cells if c.id not in started]
    assert queued
    with pytest.raises(Exception) as err:
        pool.result(queued[0])
    assert not_started(err.value)


def test_I161_the_automatic_concurrency_is_one_keyless_and_the_connection_share_live() -> None:
    assert choose(0, keyless_instant=True, max_connections=8, processes=2) == 1
    assert choose(0, keyless_instant=False, max_connections=16, processes=2) == 10
    assert choose(0, keyless_instant=False, max_connections=8, processes=1) == 10
    assert choose(0, keyless_instant=False, max_connections=2, processes=4) == 2
    assert choose(0, keyless_instant=False, max_connections=16, processes=2, alone=True) == 1
    assert choose(3, keyless_instant=True, max_connections=8, processes=2) == 3
    assert choose(3, keyless_instant=False, max_connections=8, processes=2, alone=True) == 1


@pytest.mark.parametrize(("budget", "least", "most"), [(0, 2, 2), (4, 4, 6), (50, 6, 6)])
def test_i162_a_pool_runs_past_its_width_while_the_shared_budget_has_room(
    wave1: Standard, budget: int, least: int, most: int
) -> None:
    """A budget of ``budget`` connections, one held by every cell inside its run: the pool
    of width 2 grows into the room nobody holds, never past ``wide``. (A cell that just
    started holds no connection yet, as a live cell between two calls holds none: the
    pool may run more cells than the budget, never more than ``wide``.)"""
    cells = _cells(wave1, "langgraph") + _cells(wave1, "autogen")
    asked: list[int] = []

    def room() -> int:
        with run.lock:
            free = max(0, budget - len(run.running))
        asked.append(free)
        return free

    run = Recorder(seconds=0.1)
    pool = CellPool(run, 2, wide=6, spare=room)
    assert pool.lookahead == 6
    assert _drive(pool, cells, pool.lookahead) == [c.id for c in cells]
    assert sorted(run.started) == sorted(c.id for c in cells)
    assert least <= run.peak <= most and least <= pool.peak <= most
    assert asked  # asked once the pool was full


def test_i162_without_a_shared_budget_the_pool_keeps_its_width(wave1: Standard) -> None:
    cells = _cells(wave1, "langgraph")
    run = Recorder()
    pool = CellPool(run, 2, wide=6)  # no spare(): the budget is this process's own
    assert pool.wide == 2
    assert _drive(pool, cells, 6) == [c.id for c in cells]
    assert run.peak == 2


def test_i162_a_worker_may_grow_to_the_whole_budget_and_a_quarter_more() -> None:
    assert widest(16) == 20
    assert widest(8) == 10
    assert widest(1) == 2
    # the tests queued on a worker hold enough cells to fill that width in the tail
    assert queue_depth(choose(0, keyless_instant=False, max_connections=16, processes=2)) > 20


def test_i162_a_pool_grows_only_once_its_first_width_cells_ended(wave1: Standard) -> None:
    """At the start the connections are idle because the first cells are setting up, not
    because another worker left them: a pool of width 2 runs two until two have ended."""
    cells = _cells(wave1, "langgraph") + _cells(wave1, "autogen")
    ended: list[str] = []
    seen: list[tuple[int, int]] = []  # (cells ended, cells running) at each start

    class Counting(Recorder):
        def __call__(self, cell: Cell) -> dict[str, Any]:
            with self.lock:
                seen.append((len(ended), len(self.running) + 1))
            try:
                return super().__call__(cell)
            finally:
                with self.lock:
                    ended.append(cell.id)

    run = Counting(seconds=0.1)
    pool = CellPool(run, 2, wide=6, spare=lambda: 50)
    assert _drive(pool, cells, pool.lookahead) == [c.id for c in cells]
    assert all(running <= 2 for done, running in seen if done < 2), seen
    assert run.peak == 6  # and grew to ``wide`` once they had
