"""From recorded cell directories to verdicts: the I/O edge around the pure scorer.

The same code scores a cell right after it ran (on an xdist worker, provisionally) and
re-scores a whole output directory at the end of a session or offline (``sabot rescore``),
so the two can never disagree on how a trace is read.

A fault run is valid only when its own no-fault baseline passed (standard section 3). Here
that means a baseline *record* in the same output, made under the same model and
registration hash as the fault cell's record (SPEC I41; the rule version a record names is
the reading its session took, never a condition: I165). A fault cell without one is
never counted: ``score_dir`` leaves it out of the verdicts and lists it as unpaired, with
the reason, so it stays out of every denominator.

A record that does not read (a torn or edited ``events.jsonl``, a trace cut before its
``run_end``, an ``outcome.json``, ``not_run.json`` or ``soft.json`` that is not what the
harness writes, a record of another cell) is *damaged*: ``read_record`` says so, naming the
file, the line or field and what is wrong, and never raises. A session sets a damaged
record aside and runs the cell again; scoring leaves it out with that reason (SPEC I108).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, Field

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.loading import parse_json, validate
from pytest_sabot.core.models.base import StrictModel
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.models.trace import Trace
from pytest_sabot.core.models.verdict import (
    BaselineVerdict,
    CellVerdict,
    Exclusion,
    cell_coordinates,
)
from pytest_sabot.core.records import OUTCOME_FILE, RunOutcome, cell_dir
from pytest_sabot.core.records import set_aside as _set_aside
from pytest_sabot.core.trace_io import PARTIAL_SUFFIX, TRACE_FILE, read_trace, write_json_atomic
from pytest_sabot.judge.models import SoftRecord
from pytest_sabot.judge.run import SOFT_FILE, read_soft_record
from pytest_sabot.matrix.standard import Standard
from pytest_sabot.results.forked import forked_map
from pytest_sabot.results.model_calls import Tally, cell_tally
from pytest_sabot.scoring import score_baseline, score_cell
from pytest_sabot.scoring.funnel import nothing_found

NOT_RUN_FILE = "not_run.json"

Verdict = CellVerdict | BaselineVerdict
M = TypeVar("M", bound=BaseModel)


class NotRun(StrictModel):
    """A fault cell deliberately not run because its baseline had already failed."""

    cell_id: str
    baseline_id: str
    baseline_status: str = Field(description="'failed' or 'RUN_ERROR'.")
    reason: str
    session: str = Field("", description="Run id of the session that decided not to run it.")
    baseline_session: str = Field(
        "", description="Run id of the session that recorded the baseline it was decided on."
    )
    model: str = Field("", description="Pipeline model of that baseline record.")
    registration_hash: str = Field("", description="Registration hash of that record.")
    rules: str = Field("", description="Rule version of that record.")


@dataclass(frozen=True)
class Provenance:
    """What a record was made under. A baseline pairs with a fault cell, and a record is
    kept by a later session, only when both were made under the same model and
    registration hash (SPEC I41). ``rules`` is the rule version the recording session read
    its records under; the rules only read a trace and never change what a run records,
    so it is carried for the reader and never compared (I165)."""

    model: str
    registration_hash: str
    rules: str

    def difference(self, other: Provenance) -> str | None:
        """How ``other`` differs, in words (None when it does not)."""
        for name, mine, theirs in (
            ("model", self.model, other.model),
            ("registration hash", self.registration_hash[:12], other.registration_hash[:12]),
        ):
            if mine != theirs:
                return f"another {name} ({theirs or 'unknown'}, not {mine or 'unknown'})"
        return None


RecordKind = Literal["none", "partial", "run", "not_run", "stopped", "damaged"]


@dataclass(frozen=True)
class Record:
    """What an output directory holds for one cell.

    ``none``: nothing; ``partial``: files of a run that never finished (killed); ``run``: a
    complete run (trace and outcome); ``not_run``: a fault cell skipped because its baseline
    failed; ``stopped``: a run the spend cap stopped (not finished, run again on resume);
    ``damaged``: files that do not read as a record (``damage`` says which file, where,
    and what is wrong)."""

    cell_id: str
    kind: RecordKind
    outcome: RunOutcome | None = None
    note: NotRun | None = None
    damage: str | None = None
    unfinished: str | None = None  # a partial record: what its folder holds

    @property
    def finished(self) -> bool:
        return self.kind in ("run", "not_run")

    @property
    def session(self) -> str:
        if self.note is not None:
            return self.note.session
        return self.outcome.session if self.outcome is not None else ""

    @property
    def provenance(self) -> Provenance | None:
        if self.note is not None:
            return Provenance(self.note.model, self.note.registration_hash, self.note.rules)
        if self.outcome is not None:
            o = self.outcome
            return Provenance(o.model, o.registration_hash, o.rules)
        return None

    @property
    def run_error(self) -> bool:
        """A complete run whose last attempt failed with a run error."""
        return self.kind == "run" and self.outcome is not None and self.outcome.error is not None


def _read_model(path: Path, model: type[M]) -> M:
    """A JSON record file as its model; anything else is a SabotDataError naming the file,
    the line or field, and what was expected. The text is parsed and validated in one step
    first; a file that does not pass is read again the way that names its problem (or
    accepts it, as it always did: the two readings agree on every file the first accepts)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SabotDataError(path, "", "UTF-8 text") from None
    except OSError as exc:
        raise SabotDataError(path, "", "a readable file", exc.strerror or str(exc)) from None
    try:
        return model.model_validate_json(text)
    except ValueError:  # a ValidationError: read it the way that names the problem
        return validate(path, model, parse_json(text, path), top_field="")


def read_outcome(run_dir: Path) -> RunOutcome | None:
    path = run_dir / OUTCOME_FILE
    if not path.is_file():
        return None
    return _read_model(path, RunOutcome)


def read_not_run(run_dir: Path) -> NotRun | None:
    path = run_dir / NOT_RUN_FILE
    if not path.is_file():
        return None
    return _read_model(path, NotRun)


def _same_cell(path: Path, field: str, recorded: str, cell_id: str) -> None:
    if recorded != cell_id:
        raise SabotDataError(path, field, f"{cell_id!r} (the cell whose record this is)",
                             recorded)


def check_trace(run_dir: Path, cell_id: str) -> Trace:
    """A finished run's trace reads whole: every line an event, the run's own cell, and the
    last event its ``run_end`` (a trace cut at a line boundary reads, but ends early).
    Returns the trace."""
    trace = read_trace(run_dir)
    path = run_dir / TRACE_FILE
    _same_cell(path, "line 1.run_start.data.cell_id", trace.start.cell_id, cell_id)
    last = trace.events[-1]
    if last.kind != "run_end":
        raise SabotDataError(
            path, f"line {len(trace.events)}",
            "the run's run_end as the last event (the file ends before it: it was cut)",
            f"{last.kind} event, seq {last.seq}",
        )
    return trace


def _check_soft(run_dir: Path) -> SoftRecord | None:
    path = run_dir / SOFT_FILE
    return _read_model(path, SoftRecord) if path.is_file() else None


@dataclass(frozen=True)
class Reading:
    """A cell's record with what reading it read whole: a run's trace and its soft verdict
    (``soft.json``, None when there is none). Scoring it from here reads no file again."""

    record: Record
    trace: Trace | None = None
    soft: SoftRecord | None = None


def read_record(out_dir: Path, cell_id: str) -> Record:
    """What the output holds for one cell; a record that does not read is ``damaged``."""
    return read_cell(out_dir, cell_id).record


def read_cell(out_dir: Path, cell_id: str) -> Reading:
    """:func:`read_record`, with the trace and soft verdict it read."""
    run_dir = cell_dir(out_dir, cell_id)
    if not run_dir.exists():
        return Reading(Record(cell_id, "none"))
    try:
        note = read_not_run(run_dir)
        if note is not None:
            _same_cell(run_dir / NOT_RUN_FILE, "cell_id", note.cell_id, cell_id)
            return Reading(Record(cell_id, "not_run", note=note))
        outcome = read_outcome(run_dir)
        if outcome is not None:
            _same_cell(run_dir / OUTCOME_FILE, "cell_id", outcome.cell_id, cell_id)
        if outcome is not None and (run_dir / TRACE_FILE).is_file():
            trace = check_trace(run_dir, cell_id)
            soft = _check_soft(run_dir)
            kind: RecordKind = "stopped" if outcome.stopped is not None else "run"
            return Reading(Record(cell_id, kind, outcome=outcome), trace, soft)
    except SabotDataError as exc:
        return Reading(Record(cell_id, "damaged", damage=str(exc)))
    held = sorted(p.name for p in run_dir.iterdir())
    if held:
        return Reading(Record(cell_id, "partial", outcome=outcome, unfinished=_unfinished(held)))
    return Reading(Record(cell_id, "none"))


def _unfinished(held: list[str]) -> str:
    """What a folder of a run that did not finish holds, for a cell counted as not run."""
    lacking = [name for name in (TRACE_FILE, OUTCOME_FILE) if name not in held]
    return (
        f"its folder holds an unfinished run ({', '.join(held)}; no {' or '.join(lacking)}): "
        "the run was stopped before its record was complete, or a file of it was removed"
    )


def is_finished(out_dir: Path, cell: Cell) -> bool:
    """Whether a cell has a complete record (a run, or a skip for a failed baseline)."""
    return read_record(out_dir, cell.id).finished


def set_aside(out_dir: Path, cell: Cell, reason: str = "", session: str = "") -> Path:
    """Move a cell's record out of the way (never delete it) before it is run again."""
    return _set_aside(out_dir, cell.id, reason or "the cell runs again", session)


def baseline_status(out_dir: Path, std: Standard, cell: Cell) -> str | None:
    """'passed', 'failed' or 'RUN_ERROR' for the cell's baseline, None when not recorded."""
    run_dir = cell_dir(out_dir, cell.baseline_id)
    if read_record(out_dir, cell.baseline_id).kind != "run":
        return None
    return score_baseline_dir(std, run_dir).status


def record_not_run(
    out_dir: Path,
    cell: Cell,
    status: str,
    session: str = "",
    baseline: Record | None = None,
) -> NotRun:
    prov = baseline.provenance if baseline is not None else None
    note = NotRun(
        session=session,
        cell_id=cell.id,
        baseline_id=cell.baseline_id,
        baseline_status=status,
        reason=f"baseline {cell.baseline_id} ended {status}; the fault run was not paid for",
        baseline_session=baseline.session if baseline is not None else "",
        model=prov.model if prov else "",
        registration_hash=prov.registration_hash if prov else "",
        rules=prov.rules if prov else "",
    )
    write_json_atomic(cell_dir(out_dir, cell.id) / NOT_RUN_FILE, note.model_dump(mode="json"))
    return note


def read_soft(run_dir: Path) -> bool | None:
    """The judge's noticed verdict for a cell, None when not judged (or a judge error)."""
    record = read_soft_record(run_dir)
    return None if record is None else record.noticed


def score_baseline_dir(
    std: Standard, run_dir: Path, reading: Reading | None = None
) -> BaselineVerdict:
    """Score a recorded baseline; ``reading`` is its record as :func:`read_cell` read it
    (what it read is not read again)."""
    trace = reading.trace if reading is not None else None
    trace = trace if trace is not None else read_trace(run_dir)
    outcome = reading.record.outcome if reading is not None else read_outcome(run_dir)
    start = trace.start
    paired = std.paired_operators(start.cell_id)
    return score_baseline(
        trace,
        passed=outcome.passed if outcome is not None else None,
        anchors_by_operator=std.anchors_by_operator(start.task),
        rules=std.rules,
        mapping=std.mappings[start.framework],
        operators=paired or None,
    )


def not_run_verdict(std: Standard, cell: Cell, note: NotRun) -> CellVerdict:
    """The verdict of a fault cell skipped because its baseline failed: BASELINE_FAIL. It
    names the surface its row's headline reads, as a scored cell of the row does, so an
    excluded cell never changes the row's reading."""
    assert cell.operator is not None
    return CellVerdict(
        cell_id=cell.id,
        **cell_coordinates(cell),
        operator=cell.operator,
        rules=std.rules.version,
        mapping_since=std.mappings[cell.framework].since,
        headline_reading=std.rules.headline_reading(cell.row),
        excluded=Exclusion(code="BASELINE_FAIL", reason=note.reason),
        **nothing_found(std.rules).verdict_fields(),
        recovered=None,
        soft_judged=False,
        baseline_known=True,
        strict_floor=False,
    )


def score_fault_dir(
    std: Standard,
    cell: Cell,
    run_dir: Path,
    baseline: str | None,
    reading: Reading | None = None,
) -> CellVerdict:
    """Score a recorded fault cell; ``baseline`` is its baseline's status, if known, and
    ``reading`` its record as :func:`read_cell` read it (its files are not read again)."""
    note = reading.record.note if reading is not None else read_not_run(run_dir)
    if note is not None:
        return not_run_verdict(std, cell, note)
    if reading is not None and reading.trace is not None:
        trace = reading.trace
        outcome = reading.record.outcome
        soft = None if reading.soft is None else reading.soft.noticed
    else:
        trace = read_trace(run_dir)
        outcome = read_outcome(run_dir)
        soft = read_soft(run_dir)
    return score_cell(
        trace,
        mapping=std.mappings[cell.framework],
        rules=std.rules,
        anchors=std.anchors_for(cell.task, cell.operator),
        passed=outcome.passed if outcome is not None else None,
        baseline_passed=None if baseline is None else baseline == "passed",
        soft_noticed=soft,
        label_unjudged=True,
    )


Accept = Callable[[Cell, Record], bool]


@dataclass
class Scored:
    """Everything ``score_dir`` found for a set of cells."""

    verdicts: list[Verdict] = field(default_factory=list)  # baselines first
    unpaired: dict[str, str] = field(default_factory=dict)  # fault cell -> why not scored
    missing: list[str] = field(default_factory=list)  # runnable cells with no usable record
    stopped: dict[str, str] = field(default_factory=dict)  # cells the spend cap stopped
    damaged: dict[str, str] = field(default_factory=dict)  # cell -> what is wrong with it
    unfinished: dict[str, str] = field(default_factory=dict)  # cell -> its partial record
    sessions: dict[str, str] = field(default_factory=dict)  # cell -> session of its record
    # cell -> its model calls, for each counted record (results.model_calls)
    tallies: dict[str, Tally] = field(default_factory=dict)


def pairing_problem(cell: Cell, fault: Record, base: Record | None) -> str | None:
    """Why a recorded fault cell cannot be scored beside this baseline record (None: it
    can). Standard section 3: no baseline, no valid cell."""
    bid = cell.baseline_id
    if base is None or not base.finished:
        if base is not None and base.kind == "damaged":
            return f"the record of baseline {bid} is damaged ({base.damage})"
        if base is not None and base.kind == "stopped":
            return f"baseline {bid} was stopped by the budget before it finished"
        return f"baseline {bid} has no record in this output"
    if base.kind != "run":
        return f"baseline {bid} has no run record"
    if fault.note is not None and fault.note.baseline_session != base.session:
        return (
            f"the cell was skipped on a record of baseline {bid} that has since been "
            "set aside"
        )
    mine, theirs = fault.provenance, base.provenance
    if mine is not None and theirs is not None:
        differs = mine.difference(theirs)
        if differs is not None:
            return f"baseline {bid} was recorded under {differs}"
    return None


def score_dir(
    std: Standard,
    out_dir: Path,
    cells: Iterable[Cell],
    accept: Accept | None = None,
    *,
    processes: int | None = 1,
) -> Scored:
    """Score every recorded cell among ``cells``.

    ``accept`` decides which records count (a session counts its own and those it kept);
    a cell whose record is not accepted is missing. A fault cell is scored only beside an
    accepted baseline record of the same provenance; otherwise it is unpaired, with the
    reason, and never counted. Baselines are scored first, so fault cells see their
    baseline's final status.

    Each cell's files are read once: a cell is scored right after its record is read, from
    the trace, outcome and soft verdict that reading read (nothing is kept for later, so a
    wave of any size holds one trace at a time per process). Every baseline is read before
    every fault cell, each group in the order of ``cells``; the lists and maps of the result
    keep the order of ``cells``. ``processes`` spreads each group's reading over forked
    processes (None: one per core; :mod:`pytest_sabot.results.forked`); the result is the
    same whatever it is."""
    chosen = [c for c in cells if not c.carved_out]
    out = Scored()
    records: dict[str, Record] = {}
    missing: set[str] = set()
    stopped: dict[str, str] = {}
    damaged: dict[str, str] = {}
    unfinished: dict[str, str] = {}
    statuses: dict[str, str] = {}

    def read(cell: Cell) -> tuple[Reading, Tally | None]:
        """The cell's record, and its model calls when it counts (None: it does not)."""
        reading = read_cell(out_dir, cell.id)
        counts = reading.record.finished and (accept is None or accept(cell, reading.record))
        return reading, cell_tally(cell_dir(out_dir, cell.id), reading.trace) if counts else None

    def noted(cell: Cell, record: Record, tally: Tally | None) -> None:
        """What the cell's record says for the result's lists, in the order of reading."""
        if record.kind == "stopped" and record.outcome is not None:
            stopped[cell.id] = record.outcome.error or "stopped by the spend cap"
        if record.kind == "damaged":
            damaged[cell.id] = str(record.damage)
        if record.unfinished is not None:
            unfinished[cell.id] = record.unfinished
        if tally is not None:
            records[cell.id] = record
            out.tallies[cell.id] = tally
        else:
            missing.add(cell.id)

    def baseline(cell: Cell) -> tuple[Record, Tally | None, BaselineVerdict | None]:
        reading, tally = read(cell)
        if tally is None or reading.record.kind != "run":
            return reading.record, tally, None
        return reading.record, tally, score_baseline_dir(
            std, cell_dir(out_dir, cell.id), reading
        )

    baselines = [c for c in chosen if c.is_baseline]
    for cell, (record, tally, verdict) in zip(
        baselines, forked_map(baseline, baselines, processes), strict=True
    ):
        noted(cell, record, tally)
        if verdict is not None:
            statuses[cell.id] = verdict.status
            out.verdicts.append(verdict)
            out.sessions[cell.id] = record.session
    in_scope = {c.id for c in chosen}

    def fault(cell: Cell) -> tuple[Record, Tally | None, str | None, CellVerdict | None]:
        reading, tally = read(cell)
        if tally is None:
            return reading.record, tally, None, None
        problem, base = _pairing(out_dir, cell, reading.record, records, in_scope)
        if problem is not None:
            return reading.record, tally, problem, None
        assert base is not None
        status = statuses.get(cell.baseline_id)
        if status is None:
            status = score_baseline_dir(
                std, cell_dir(out_dir, cell.baseline_id), Reading(base)
            ).status
        verdict = score_fault_dir(std, cell, cell_dir(out_dir, cell.id), status, reading)
        return reading.record, tally, None, verdict

    faults = [c for c in chosen if not c.is_baseline]
    for cell, (record, tally, problem, scored) in zip(
        faults, forked_map(fault, faults, processes), strict=True
    ):
        noted(cell, record, tally)
        if problem is not None:
            out.unpaired[cell.id] = problem
        if scored is not None:
            out.verdicts.append(scored)
            out.sessions[cell.id] = record.session
    for cell in chosen:  # in the order of ``cells``, as each was read
        if cell.id in stopped:
            out.stopped[cell.id] = stopped[cell.id]
        if cell.id in damaged:
            out.damaged[cell.id] = damaged[cell.id]
        if cell.id in unfinished:
            out.unfinished[cell.id] = unfinished[cell.id]
        if cell.id in missing:
            out.missing.append(cell.id)
    return out


def _pairing(
    out_dir: Path, cell: Cell, fault: Record, records: dict[str, Record], in_scope: set[str]
) -> tuple[str | None, Record | None]:
    """Why a counted fault cell cannot be scored (None: it can), and the baseline record it
    is scored beside. ``records`` holds every counted baseline of the cells in scope."""
    bid = cell.baseline_id
    if bid in in_scope and bid not in records:
        raw = read_record(out_dir, bid)
        if raw.finished:
            return (
                f"baseline {bid} is recorded only by a session whose records this one "
                "does not count"
            ), None
        return pairing_problem(cell, fault, raw), None
    base = records.get(bid) if bid in in_scope else read_record(out_dir, bid)
    return pairing_problem(cell, fault, base), base


def score_recorded(std: Standard, out_dir: Path, cells: Iterable[Cell]) -> list[Verdict]:
    """Score every recorded cell among ``cells``: baselines first, then each fault cell
    that has a recorded baseline of the same provenance (unrecorded and unpaired cells are
    left out; ``score_dir`` says why)."""
    return score_dir(std, out_dir, cells).verdicts


def missing(out_dir: Path, cells: Iterable[Cell]) -> list[str]:
    """Ids of runnable cells with no complete record."""
    return [c.id for c in cells if not c.carved_out and not is_finished(out_dir, c)]


def has_leftovers(out_dir: Path, cell_id: str) -> bool:
    """Whether a cell's directory holds the files of a run that never finished."""
    run_dir = cell_dir(out_dir, cell_id)
    return (run_dir / (TRACE_FILE + PARTIAL_SUFFIX)).is_file() and not (
        run_dir / OUTCOME_FILE
    ).is_file()
