"""Several cells in flight in one process (``--sabot-concurrency N``).

A live pipeline spends nearly all its time waiting for the model, one call after another:
one cell at a time per process would keep at most ``-n`` calls in flight, however many
connections the provider allows. So a process that runs cells starts the cells its queue
holds next (pytest's own order without xdist, the worker's queue with it) ahead of their
tests, up to N at once, each in a thread of its own; each test then waits for its own
cell's result and reports it, so pytest still reports one test per cell, in order.

What stays as in a run one cell at a time (the records are the same, cell by cell):

* a framework is imported before any of its cells starts, one framework at a time, in a
  thread of its own while the cells of the frameworks already imported run (its cells
  wait for it); nothing else of a first cell runs alone: what did need it, CPython 3.11's
  syntax-tree constructor counting its depth in state every thread shares ("SystemError:
  AST constructor recursion depth mismatch"), is met by one lock around every
  ``ast.parse`` of the process (session/parse_lock.py), which frameworks call in every
  run, not only in their first;
* a baseline and its fault cells run in the order their tests come in: a fault cell never
  starts while its baseline, queued before it, has not ended, and a baseline never starts
  while a fault cell of it queued before it has not; each reads the other's record as it
  would have in the sequential run;
* a framework that holds process-wide state for a run (``FrameworkAdapter.one_run_at_a_time``:
  CrewAI points the environment into the run's directory) never has two of its cells
  running at once in one process; the other frameworks' cells fill the room;
* nothing starts once the session stops (the spend cap, an unwritable output, an
  interrupt): the cells started ahead of their tests are stopped as an interrupted cell
  is (their files are set aside and run again on resume), and the ones already recorded
  are kept, as every finished record is;
* the spend cap, the ledger, retries, timeouts and crashes are the harness's own, per
  cell, whatever runs beside it; a worker killed with cells in flight leaves each of them
  unfinished: the one its test was waiting for is the crashed cell (retried once, SPEC
  I45), the others are set aside and run again where xdist sends them (SPEC I161).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_sabot.core.models.cells import Cell
from pytest_sabot.session.parse_lock import serialise_parses

# How long the session's end waits for cells it stopped to leave their threads.
STOP_WAIT_S = 30.0
# A quarter more cells than connections: a cell spends some of its time between calls
# (the framework's own work, the harness's writes), so more cells than connections keep
# the connections busy; the gateway queues the calls past its limit.
HEADROOM = 0.25
# How far ahead a process looks in its queue, in widths: a cell whose test is next may
# take longer than the ones after it, and the cells it holds up must not leave the room
# empty (the session's load scheduling keeps this many tests queued on each worker).
LOOKAHEAD = 3


def widest(max_connections: int) -> int:
    """The most cells a process runs at once when its gateway shares the session's budget
    with the other workers': the whole budget and a quarter more, for the time one worker
    is alone with the work (the end of a session: its partner's queue ran dry)."""
    connections = max(1, max_connections)
    return connections + math.ceil(connections * HEADROOM)


def queue_depth(width: int) -> int:
    """The tests a worker keeps queued with ``width`` cells in flight: the one it runs and
    LOOKAHEAD widths after it."""
    return LOOKAHEAD * max(1, width) + 1


def choose(
    given: int,
    *,
    keyless_instant: bool,
    max_connections: int,
    processes: int,
    alone: bool = False,
) -> int:
    """The number of cells in flight per process: 1 for a trusted agent (``alone``: its
    supervisor is the process's own); ``given`` when one is (``--sabot-concurrency N``);
    otherwise 1 for a model that answers at once (the embedded one without a latency, a
    replay: the cells are CPU-bound, and the processes are the parallelism), else the
    process's share of the connections and a quarter more."""
    if alone:
        return 1
    if given > 0:
        return given
    if keyless_instant:
        return 1
    share = max(1, max_connections // max(1, processes))
    return share + math.ceil(share * HEADROOM)


@dataclass
class _Slot:
    cell: Cell
    state: str = "queued"  # queued | running | done
    order: int = 0  # its place in the order the tests come in
    wanted: bool = False  # its test waits for it
    result: dict[str, Any] | None = None
    error: BaseException | None = None
    ended: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)


class CellPool:
    """Runs up to ``width`` cells at once with ``run`` (CellRunner.run), ahead of their
    tests; :meth:`result` hands each test its own cell's result (or raises its error).

    ``may_start()`` is asked before a cell starts ahead of its test (False once the
    session stops); ``alone`` names the frameworks run one cell at a time; ``prepare``
    imports a framework (its cells start once it returned; one at a time).

    ``wide`` and ``spare``: with a connection budget shared with other processes, the pool
    runs more than ``width`` cells, up to ``wide``, while ``spare()`` (the connections of
    the budget nobody holds, 0 while calls of this process wait for one) says the room is
    there: the room another worker left when its queue ran dry (SPEC I162)."""

    def __init__(
        self,
        run: Callable[[Cell], dict[str, Any]],
        width: int,
        *,
        alone: frozenset[str] = frozenset(),
        may_start: Callable[[], bool] = lambda: True,
        prepare: Callable[[str], None] | None = None,
        wide: int = 0,
        spare: Callable[[], int] | None = None,
    ) -> None:
        self._run = run
        self.width = max(1, width)
        self.wide = max(self.width, wide) if spare is not None else self.width
        self._spare = spare
        self.lookahead = max(LOOKAHEAD * self.width, self.wide)
        self._prepare = prepare
        self._alone = alone
        self._may_start = may_start
        self._lock = threading.Lock()
        self._slots: dict[str, _Slot] = {}  # in the order cells were queued
        self._closed = False
        self._queued = 0
        self._ready: set[str] = set()  # frameworks imported in this process
        self._importing: str | None = None  # the framework being imported
        self.peak = 0  # the most cells that ran at once (the bench reads it)
        self._ended = 0  # cells that ended here
        if self.width > 1:
            serialise_parses()

    # ------------------------------------------------------------------ the test's side

    def result(self, cell: Cell, upcoming: Sequence[Cell] = ()) -> dict[str, Any]:
        """The result of ``cell``'s run: started now unless it was started ahead, with the
        cells that come after it queued to start as room allows."""
        with self._lock:
            slot = self._slots.get(cell.id)
            if slot is None:
                slot = self._slots[cell.id] = self._slot(cell)
            slot.wanted = True
            if not self._closed:
                for nxt in upcoming:
                    if nxt.id not in self._slots:
                        self._slots[nxt.id] = self._slot(nxt)
            self._fill(first=slot)
        slot.ended.wait()
        with self._lock:
            self._slots.pop(cell.id, None)
        if slot.error is not None:
            raise slot.error
        assert slot.result is not None
        return slot.result

    def stop(self, wait_s: float = STOP_WAIT_S) -> int:
        """Start nothing more; stop the cells running ahead of their tests as an interrupt
        stops a cell, and wait (at most ``wait_s``) for them to leave. Returns how many
        are still running."""
        with self._lock:
            self._closed = True
            running = [s for s in self._slots.values() if s.state == "running"]
            for slot in self._slots.values():
                if slot.state == "queued":
                    slot.state = "done"
                    slot.error = _NotStarted(slot.cell.id)
                    slot.ended.set()
        for slot in running:
            slot.stop.set()
        deadline = time.monotonic() + wait_s
        for slot in running:
            slot.ended.wait(max(0.0, deadline - time.monotonic()))
        return sum(not slot.ended.is_set() for slot in running)

    # ------------------------------------------------------------------ scheduling

    def _slot(self, cell: Cell) -> _Slot:
        self._queued += 1
        return _Slot(cell, order=self._queued)

    def _running(self) -> list[_Slot]:
        return [s for s in self._slots.values() if s.state == "running"]

    def _startable(self, slot: _Slot, running: list[_Slot]) -> bool:
        cell = slot.cell
        if self._prepare is not None and cell.framework not in self._ready:
            return False  # its framework is not imported yet
        if cell.framework in self._alone and any(
            r.cell.framework == cell.framework for r in running
        ):
            return False
        # A baseline and its fault cells keep the order their tests come in: a fault cell
        # after its baseline reads it recorded, one before it reads it pending.
        if cell.operator is not None:
            base = self._slots.get(cell.baseline_id)
            return base is None or base.order > slot.order or base.state == "done"
        return not any(
            s.cell.operator is not None and s.cell.baseline_id == cell.id
            and s.order < slot.order and s.state != "done"
            for s in self._slots.values()
        )

    def _fill(self, first: _Slot | None = None) -> None:
        """Start what room allows (under the lock): the cells tests wait for first (they
        start even after the pool closed: their tests asked for them), then the queue in
        order."""
        running = self._running()
        order = [first] if first is not None else []
        order += [s for s in self._slots.values() if s.wanted and s is not first]
        order += [s for s in self._slots.values() if not s.wanted]
        self._import_next(order)
        width = self._room(len(running))
        for slot in order:
            if len(running) >= width:
                break
            if slot.state != "queued" or not self._startable(slot, running):
                continue
            if not slot.wanted and (self._closed or not self._may_start()):
                continue
            slot.state = "running"
            running.append(slot)
            thread = threading.Thread(
                target=self._work, args=(slot,), name=f"sabot-cell-{slot.cell.id}",
                daemon=True,
            )
            thread.sabot_stop = slot.stop  # type: ignore[attr-defined]  # read by harness.run
            thread.start()
        self.peak = max(self.peak, len(running))

    def _room(self, running: int) -> int:
        """How many cells may run now: ``width``, or more while the shared budget has
        connections nobody holds (asked only when the pool is full). Not at the start:
        until ``width`` cells have ended here and while a framework is being imported,
        the idle connections are the first cells' set-up (CPU the import and those
        cells share), not room another worker left."""
        if running < self.width or self.wide <= self.width or self._spare is None:
            return self.width
        if self._ended < self.width or self._importing is not None:
            return self.width
        return min(self.wide, running + max(0, self._spare()))

    def _import_next(self, order: list[_Slot]) -> None:
        """Start importing the framework of the first queued cell whose framework is not
        imported (under the lock; one import at a time)."""
        if self._prepare is None or self._importing is not None:
            return
        for slot in order:
            framework = slot.cell.framework
            if slot.state != "queued" or framework in self._ready:
                continue
            if not slot.wanted and (self._closed or not self._may_start()):
                continue
            self._importing = framework
            threading.Thread(
                target=self._import, args=(framework,), name=f"sabot-import-{framework}",
                daemon=True,
            ).start()
            return

    def _import(self, framework: str) -> None:
        assert self._prepare is not None
        try:
            self._prepare(framework)
        except Exception:  # the cell's own run meets it and records it
            pass
        finally:
            with self._lock:
                self._ready.add(framework)
                self._importing = None
                self._fill()

    def _work(self, slot: _Slot) -> None:
        try:
            slot.result = self._run(slot.cell)
        except BaseException as exc:  # handed to the cell's own test, which raises it
            slot.error = exc
        finally:
            with self._lock:
                slot.state = "done"
                self._ended += 1
                slot.ended.set()
                self._fill()


class _NotStarted(Exception):
    """A cell queued ahead of its test when the session stopped: never started."""

    def __init__(self, cell_id: str) -> None:
        super().__init__(f"{cell_id}: not started, the session is stopping")


def not_started(exc: BaseException) -> bool:
    return isinstance(exc, _NotStarted)


def upcoming_items(session: Any, item: Any, count: int) -> list[Any]:
    """The items this process runs after ``item``, at most ``count``: the worker's queue
    under xdist (the indices the controller has sent it and it has not run), pytest's own
    order otherwise."""
    if count <= 0:
        return []
    items: list[Any] = list(getattr(session, "items", []) or [])
    interactor = _worker_interactor(session.config)
    if interactor is None:
        try:
            at = items.index(item)
        except ValueError:
            return []
        return items[at + 1 : at + 1 + count]
    with interactor.torun.lock() as queued:
        indices = [interactor.nextitem_index, *list(queued)[: count]]
    return [items[i] for i in indices if isinstance(i, int) and 0 <= i < len(items)][:count]


def _worker_interactor(config: Any) -> Any:
    """xdist's WorkerInteractor of this worker (None outside an xdist worker)."""
    if not hasattr(config, "workerinput"):
        return None
    for plugin in config.pluginmanager.get_plugins():
        if hasattr(plugin, "torun") and hasattr(plugin, "nextitem_index"):
            return plugin
    return None
