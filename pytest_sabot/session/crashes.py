"""A worker that dies while running a cell (SPEC I45): xdist replaces it; the crash is
the cell's first attempt, kept for the retry; a second crash is recorded as RUN_ERROR with
the crash as its text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.trace_io import OutputUnwritable
from pytest_sabot.session.selection import CELL_MODULE, cell_id_of

if TYPE_CHECKING:
    from pytest_sabot.session.core import SabotSession


def worker_crashed(state: SabotSession, nodeid: str, report: Any, sched: Any) -> None:
    """xdist lost the worker running this cell. The crash is the cell's first attempt:
    it runs once more; a second crash is recorded as RUN_ERROR with the crash text."""
    cid = cell_id_of(nodeid)
    if cid is None or state.std is None:
        return
    from pytest_sabot.core.records import cell_dir
    from pytest_sabot.harness.run import note_crash, record_crash
    from pytest_sabot.results.adjudicate import has_leftovers

    cell = state.std.cell(cid)
    message = str(report.longrepr)
    # xdist's report of a crash names no phase and no file: it is a harness error of
    # this cell's test (E), at the cell module
    report.when = "setup"
    report.location = (str(CELL_MODULE), None, nodeid.rsplit("::", 1)[-1])
    node = getattr(report, "node", None)
    worker = str(node.gateway.id) if node is not None else "a worker"
    state.crashes[cid] += 1
    involved = [c for c in (cell, _baseline_of(state, cell)) if c is not None]
    broken = [c for c in involved if has_leftovers(state.out_dir, c.id)]
    if not broken and not _finished_here(state, cell):
        broken = [cell]
    # else: with cells in flight (SPEC I161) the cell its test waited for may have been
    # recorded before the worker died: it is kept as it is, and its test runs again to
    # report it.
    try:
        if state.crashes[cid] == 1:
            for c in broken:
                note_crash(cell_dir(state.out_dir, c.id), state.run_id, worker, message)
            sched.mark_test_pending(nodeid)
            report.outcome = "rerun"
            return
    except (AttributeError, NotImplementedError):
        pass  # a scheduler that cannot reschedule: record the crash now
    except OutputUnwritable as exc:
        state.stop_reason, state.stop_detail = "output unwritable", str(exc)
        return
    settings = state.runner_settings()
    try:
        for c in broken:
            record_crash(c, state.std.wave, settings, message, state.crashes[cid])
    except OutputUnwritable as exc:
        state.stop_reason, state.stop_detail = "output unwritable", str(exc)
    if not (cell_dir(state.out_dir, cid) / "outcome.json").is_file():
        state.crashed_cells[cid] = message
    report.sabot_crash = message


def _finished_here(state: SabotSession, cell: Cell) -> bool:
    from pytest_sabot.results.adjudicate import read_record

    record = read_record(state.out_dir, cell.id)
    return record.finished and record.session == state.run_id


def _baseline_of(state: SabotSession, cell: Cell) -> Cell | None:
    if cell.is_baseline or cell.carved_out or state.selection is None:
        return None
    if cell.baseline_id in set(state.selection.ids):
        return None
    return state.standard.cell(cell.baseline_id)
