"""From recorded cell directories to verdicts: the I/O edge around the pure scorer.

The same code scores a cell right after it ran (on an xdist worker, provisionally) and
re-scores a whole output directory at the end of a session or offline (``sabot rescore``),
so the two can never disagree on how a trace is read.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from pytest_sabot.harness.run import OUTCOME_FILE, RunOutcome, cell_dir
from pytest_sabot.judge.run import read_soft_record
from pytest_sabot.models.cells import Cell
from pytest_sabot.models.verdict import BaselineVerdict, CellVerdict, Exclusion
from pytest_sabot.scoring import score_baseline, score_cell
from pytest_sabot.standard import Standard
from pytest_sabot.trace_io import TRACE_FILE, read_trace, write_json_atomic

NOT_RUN_FILE = "not_run.json"


class NotRun(BaseModel):
    """A fault cell deliberately not run because its baseline had already failed."""

    model_config = ConfigDict(extra="forbid")

    cell_id: str
    baseline_id: str
    baseline_status: str = Field(description="'failed' or 'RUN_ERROR'.")
    reason: str
    session: str = Field("", description="The session that decided not to run the cell.")


def unfinished_business(out_dir: Path, cell: Cell, session: str) -> bool:
    """A record that a resumed session must redo: a run error (the budget stopped it, the
    session was killed mid-retry, the network failed) or a skip for a failed baseline,
    recorded by an earlier session. Records of this session are final."""
    run_dir = cell_dir(out_dir, cell.id)
    note_path = run_dir / NOT_RUN_FILE
    if note_path.is_file():
        return NotRun.model_validate_json(note_path.read_text()).session != session
    outcome = read_outcome(run_dir)
    return outcome is not None and outcome.error is not None and outcome.session != session


def set_aside(out_dir: Path, cell: Cell) -> Path:
    """Move a cell's record out of the way (never delete it) before it is run again."""
    import shutil

    run_dir = cell_dir(out_dir, cell.id)
    base = out_dir / "superseded" / cell.id
    n = 1
    while (base.parent / f"{cell.id}~{n}").exists():
        n += 1
    target = base.parent / f"{cell.id}~{n}"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(run_dir), str(target))
    return target


def read_outcome(run_dir: Path) -> RunOutcome | None:
    path = run_dir / OUTCOME_FILE
    if not path.is_file():
        return None
    return RunOutcome.model_validate_json(path.read_text(encoding="utf-8"))


def is_finished(out_dir: Path, cell: Cell) -> bool:
    """Whether a cell has a complete record (resume skips it)."""
    run_dir = cell_dir(out_dir, cell.id)
    if (run_dir / NOT_RUN_FILE).is_file():
        return True
    return read_outcome(run_dir) is not None and (run_dir / TRACE_FILE).is_file()


def baseline_status(out_dir: Path, std: Standard, cell: Cell) -> str | None:
    """'passed', 'failed' or 'RUN_ERROR' for the cell's baseline, None when not recorded."""
    run_dir = cell_dir(out_dir, cell.baseline_id)
    if read_outcome(run_dir) is None or not (run_dir / TRACE_FILE).is_file():
        return None
    verdict = score_baseline_dir(std, run_dir)
    return verdict.status


def record_not_run(out_dir: Path, cell: Cell, status: str, session: str = "") -> NotRun:
    note = NotRun(
        session=session,
        cell_id=cell.id,
        baseline_id=cell.baseline_id,
        baseline_status=status,
        reason=f"baseline {cell.baseline_id} ended {status}; the fault run was not paid for",
    )
    write_json_atomic(cell_dir(out_dir, cell.id) / NOT_RUN_FILE, note.model_dump(mode="json"))
    return note


def read_soft(run_dir: Path) -> bool | None:
    """The judge's noticed verdict for a cell, None when not judged (or a judge error)."""
    record = read_soft_record(run_dir)
    return None if record is None else record.noticed


def score_baseline_dir(std: Standard, run_dir: Path) -> BaselineVerdict:
    trace = read_trace(run_dir)
    outcome = read_outcome(run_dir)
    return score_baseline(
        trace,
        passed=outcome.passed if outcome is not None else None,
        anchors_by_operator=std.anchors_by_operator(trace.start.task),
        rules=std.rules,
    )


def not_run_verdict(std: Standard, cell: Cell, note: NotRun) -> CellVerdict:
    """The verdict of a fault cell skipped because its baseline failed: BASELINE_FAIL."""
    assert cell.operator is not None
    return CellVerdict(
        cell_id=cell.id,
        wave=cell.wave,
        framework=cell.framework,
        config=cell.config,
        operator=cell.operator,
        task=cell.task,
        seed=cell.seed,
        row=cell.row,
        rules=std.rules.version,
        mapping_since=std.mappings[cell.framework].since,
        excluded=Exclusion(code="BASELINE_FAIL", reason=note.reason),
        mapping_permissive=False,
        mapping_narrow=False,
        wave1_mapping=False,
        anchored_flag=False,
        any_flag=False,
        detected_hard=False,
        detected_soft=False,
        detection="MISSED",
        reacted=False,
        reacted_identity=False,
        reacted_independent=False,
        recovered=None,
        soft_judged=False,
        baseline_known=True,
        strict_floor=False,
    )


def score_fault_dir(std: Standard, cell: Cell, run_dir: Path, baseline: str | None) -> CellVerdict:
    """Score a recorded fault cell; ``baseline`` is its baseline's status, if known."""
    note_path = run_dir / NOT_RUN_FILE
    if note_path.is_file():
        return not_run_verdict(std, cell, NotRun.model_validate_json(note_path.read_text()))
    trace = read_trace(run_dir)
    outcome = read_outcome(run_dir)
    return score_cell(
        trace,
        mapping=std.mappings[cell.framework],
        rules=std.rules,
        anchors=std.anchors_for(cell.task, cell.operator),
        passed=outcome.passed if outcome is not None else None,
        baseline_passed=None if baseline is None else baseline == "passed",
        soft_noticed=read_soft(run_dir),
    )


def score_recorded(
    std: Standard, out_dir: Path, cells: Iterable[Cell]
) -> list[CellVerdict | BaselineVerdict]:
    """Score every recorded cell among ``cells`` (unrecorded ones are left out and listed
    by ``missing``). Baselines first, so fault cells see their baseline's final status."""
    chosen = list(cells)
    verdicts: list[CellVerdict | BaselineVerdict] = []
    statuses: dict[str, str] = {}
    for cell in chosen:
        if cell.is_baseline and is_finished(out_dir, cell):
            base = score_baseline_dir(std, cell_dir(out_dir, cell.id))
            statuses[cell.id] = base.status
            verdicts.append(base)
    for cell in chosen:
        if cell.is_baseline or cell.carved_out or not is_finished(out_dir, cell):
            continue
        status = statuses.get(cell.baseline_id)
        if status is None:
            status = baseline_status(out_dir, std, cell)
        verdicts.append(score_fault_dir(std, cell, cell_dir(out_dir, cell.id), status))
    return verdicts


def missing(out_dir: Path, cells: Iterable[Cell]) -> list[str]:
    """Ids of runnable cells with no complete record."""
    return [c.id for c in cells if not c.carved_out and not is_finished(out_dir, c)]
