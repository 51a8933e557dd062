"""A map over independent items, spread over forked processes, results in the items' order.

Offline reading of a finished output (``sabot rescore``) reads and scores each cell on its
own: the work splits over the machine's cores. The function and everything it reads (the
loaded standard, what the caller has already read) reach the processes by ``fork``, never
pickled; only an item's position goes out and its (small) result comes back.

It is a plain map in this process whenever forking is not safe or not worth it: one process
asked for, too few items, a platform without ``fork``, or another thread alive in this
process (a fork copies only the calling thread, and a lock another thread holds would stay
held in the child; a pytest session has such threads, so it always maps in place). An item
whose function raises in a child is run again here, so the caller sees the very exception a
plain map raises.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")

MIN_ITEMS_PER_PROCESS = 64
"""Below this many items per process, forking costs more than it saves."""
CHUNK = 32
"""Items handed to a process at a time (fewer round trips than one by one)."""

_JOB: _Job[Any, Any] | None = None  # the map under way, inherited by the forked processes


class _Failed:
    """What a child returns for an item whose function raised (it is run again here)."""


class _Job(Generic[ItemT, ResultT]):
    def __init__(self, fn: Callable[[ItemT], ResultT], items: Sequence[ItemT]) -> None:
        self.fn = fn
        self.items = items


def _run_chunk(bounds: tuple[int, int]) -> list[Any]:
    job = _JOB
    assert job is not None, "a chunk runs only in a process forked for the map"
    out: list[Any] = []
    for index in range(*bounds):
        try:
            out.append(job.fn(job.items[index]))
        except Exception:
            out.append(_Failed())
    return out


def usable_processes(requested: int | None = None) -> int:
    """How many processes a map may use: ``requested`` (None: one per core this process
    may run on), or 1 where forking is not safe here."""
    import multiprocessing  # here, not at import: a pytest session never forks

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if threading.active_count() > 1:
        return 1
    if requested is not None:
        return max(1, requested)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # a platform without affinity masks
        return max(1, os.cpu_count() or 1)


def forked_map(
    fn: Callable[[ItemT], ResultT], items: Sequence[ItemT], processes: int | None = 1
) -> list[ResultT]:
    """``[fn(item) for item in items]``, spread over up to ``processes`` forked processes
    (None: one per core; 1: in this process)."""
    count = min(usable_processes(processes), len(items) // MIN_ITEMS_PER_PROCESS)
    if count <= 1:
        return [fn(item) for item in items]
    import multiprocessing

    global _JOB
    _JOB = _Job(fn, items)
    try:
        chunks = [(start, min(start + CHUNK, len(items))) for start in range(0, len(items), CHUNK)]
        with multiprocessing.get_context("fork").Pool(count) as pool:
            parts = pool.map(_run_chunk, chunks, chunksize=1)
    finally:
        _JOB = None
    results: list[ResultT] = []
    for (start, _stop), part in zip(chunks, parts, strict=True):
        for offset, result in enumerate(part):
            results.append(fn(items[start + offset]) if isinstance(result, _Failed) else result)
    return results


__all__ = ["forked_map", "usable_processes"]
