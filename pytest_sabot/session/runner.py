"""Running one cell inside a pytest test: which record to keep, which to set aside, the
baseline it pairs with, the run itself, the judge, and the provisional verdict.

Returns a plain JSON-able dict (it travels on the test report across xdist). The verdict
computed here is provisional when the cell's baseline had not been recorded yet; the
session's final verdicts are always re-scored from disk once every cell has run, so they
never depend on execution order (SPEC I16).

Which records a session keeps (SPEC I19, I41, I42):

- a record this session made is final;
- a fresh session runs every selected cell again, setting an earlier record aside;
- a resumed session keeps every finished record made under the same model and
  registration hash (the rules only read records: SPEC I165), and runs only the cells with
  none; a recorded RUN_ERROR is kept
  too unless ``--sabot-rerun-errors`` asks for it to be run again;
- a baseline outside the selection that a selected fault cell pairs with is pulled in:
  reused when this output already holds a finished record of it under the same
  provenance, run otherwise.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.models.verdict import BaselineVerdict, CellVerdict
from pytest_sabot.core.records import CRASH_FILE, LOCKS_DIR, cell_dir, set_aside
from pytest_sabot.core.trace_io import TRACE_FILE, OutputUnwritable, read_trace, scrub_tree
from pytest_sabot.gateway.client import GatewayClient
from pytest_sabot.harness.run import RunSettings, run_cell
from pytest_sabot.judge import JudgeBackend
from pytest_sabot.judge.run import judge_trace, read_soft_record, write_soft
from pytest_sabot.matrix.standard import Standard
from pytest_sabot.results.adjudicate import (
    Provenance,
    Record,
    read_record,
    record_not_run,
    score_baseline_dir,
    score_fault_dir,
)
from pytest_sabot.results.outcomes import (
    BUDGET_STOP,
    STRUCTURAL,
    Outcome,
    outcome_of,
)
from pytest_sabot.session.start_order import run_seconds


def lab_evidence(run_dir: Path) -> None:
    """A lab cell's record (run.json, written by the harness) gets the renderings every
    lab run has beside it: report.html and junit.xml. A record that cannot be read gets
    none (scoring names it)."""
    from pytest_sabot.core.errors import SabotDataError
    from pytest_sabot.lab.record import read_run
    from pytest_sabot.lab.vocabulary import RUN_FILE
    from pytest_sabot.report.lab_files import write_lab_evidence

    if not (run_dir / RUN_FILE).is_file():
        return
    try:
        record = read_run(run_dir / RUN_FILE)
    except SabotDataError:
        return
    write_lab_evidence(run_dir, record)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive file lock, so two xdist workers never run the same baseline at once."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(path)
        lock.acquire()
    except OSError as exc:
        raise OutputUnwritable(path, exc) from exc
    try:
        yield
    finally:
        lock.release()


@dataclass
class CellRunner:
    std: Standard
    settings: RunSettings
    selected: frozenset[str]
    resume: bool = False
    rerun_errors: bool = False
    judge: JudgeBackend | None = None
    judge_label: str = ""
    junit_properties: bool = True  # per-testcase properties (only where the family allows)
    # The client of this process's own gateway, holding its service: control calls skip
    # HTTP (gateway/client.py). None: each run makes one from the settings' URL.
    gateway: GatewayClient | None = None
    # What run() notes for the controller, per thread: several cells may run at once in
    # one process (session/inflight.py), each in a thread of its own.
    _local: threading.local = field(default_factory=threading.local, repr=False)
    # The cell directories this process ran a pipeline in, scrubbed once more at its end.
    _ran: list[Path] = field(default_factory=list, repr=False)

    def scrub_again(self) -> None:
        """Each cell directory this process ran a pipeline in, scrubbed of its secrets once
        more: a pipeline's thread that outlived its run (a timeout, a daemon) may have
        written there after the run's own scrub (SPEC I106)."""
        for run_dir in list(self._ran):
            with contextlib.suppress(OutputUnwritable):
                scrub_tree(run_dir)

    @property
    def _events(self) -> list[dict[str, str]]:
        events: list[dict[str, str]] | None = getattr(self._local, "events", None)
        if events is None:
            events = self._local.events = []
        return events

    @property
    def out_dir(self) -> Path:
        return self.settings.out_dir

    @property
    def provenance(self) -> Provenance:
        s = self.settings
        return Provenance(s.model.given, s.registration_hash, s.rules)

    # ------------------------------------------------------------------ records

    def _note(self, kind: str, cell_id: str, detail: str = "") -> None:
        """Something the controller should know (set aside, pulled in, ...)."""
        self._events.append({"kind": kind, "cell_id": cell_id, "detail": detail})

    def _compatible(self, record: Record) -> bool:
        mine = record.provenance
        return mine is not None and self.provenance.difference(mine) is None

    def _keep(self, cell: Cell, record: Record, pulled_in: bool) -> bool:
        """Whether a finished record found on disk stands for this session."""
        if not record.finished:
            return False
        if record.session == self.settings.session and self.settings.session:
            return True
        if not self._compatible(record):
            return False
        if record.note is not None:
            base = read_record(self.out_dir, cell.baseline_id)
            if base.session != record.note.baseline_session:
                return False  # decided on a baseline record that has been replaced
            if self.resume and self.rerun_errors and base.run_error:
                return False  # decided on a RUN_ERROR that is to run again: decide again
        if record.run_error:
            return self.resume and not self.rerun_errors
        if pulled_in:
            return True  # a baseline recorded earlier in this output (SPEC I41)
        return self.resume

    def _why_aside(self, record: Record) -> str:
        if record.kind == "damaged":
            return f"a damaged record ({record.damage}); run again"
        if not record.finished:
            if record.kind == "stopped":
                return "stopped by the spend cap before it finished; run again"
            return "files of a run that never finished (interrupted); run again"
        if record.session == self.settings.session:
            return "run again in the same session"
        if not self._compatible(record):
            prov = record.provenance
            differs = self.provenance.difference(prov) if prov is not None else None
            return f"recorded under {differs or 'an unknown provenance'}; run again"
        if record.run_error and self.resume:
            return "a recorded RUN_ERROR, run again (--sabot-rerun-errors)"
        if record.note is not None:
            return ("skipped on a baseline record that has since been replaced or runs again "
                    "(--sabot-rerun-errors); decided again")
        return "a fresh session runs the cell again"

    def _ensure(self, cell: Cell, *, pulled_in: bool = False) -> Record:
        """Make sure the cell has a record this session stands for; returns it."""
        with _locked(self.out_dir / LOCKS_DIR / f"{cell.id}.lock"):
            record = read_record(self.out_dir, cell.id)
            if self._keep(cell, record, pulled_in):
                if pulled_in and record.session != self.settings.session:
                    self._note("pulled_in", cell.id, "reused")
                return record
            if record.kind != "none":
                reason = self._why_aside(record)
                if record.kind == "damaged":
                    self._note("damaged", cell.id, str(record.damage))
                if record.run_error and self.resume and self._compatible(record):
                    self._note("rerun_error", cell.id)
                if record.kind != "partial" or not self._crash_retry(cell):
                    set_aside(self.out_dir, cell.id, reason, self.settings.session)
                    self._note("set_aside", cell.id, reason)
            if cell.operator is not None:
                status, base = self._baseline_status(cell)
                if status in ("failed", "RUN_ERROR"):
                    record_not_run(self.out_dir, cell, status, self.settings.session, base)
                    return read_record(self.out_dir, cell.id)
            self._ran.append(cell_dir(self.out_dir, cell.id))
            run_cell(cell, self.std.wave, self.settings, self.gateway)
            lab_evidence(cell_dir(self.out_dir, cell.id))
            if pulled_in:
                self._note("pulled_in", cell.id, "run")
            return read_record(self.out_dir, cell.id)

    def _crash_retry(self, cell: Cell) -> bool:
        """A partial record this session's crashed worker left: run_cell keeps it as the
        cell's first attempt."""
        path = cell_dir(self.out_dir, cell.id) / CRASH_FILE
        return path.is_file() and self.settings.session in path.read_text(encoding="utf-8")

    def _baseline_status(self, cell: Cell) -> tuple[str | None, Record | None]:
        """The status of the fault cell's baseline as this session stands for it, None when
        it is selected and not recorded yet (its own test records it: provisional)."""
        bid = cell.baseline_id
        if bid in self.selected:
            record = read_record(self.out_dir, bid)
            if record.kind == "run" and self._keep(self.std.cell(bid), record, False):
                return score_baseline_dir(self.std, cell_dir(self.out_dir, bid)).status, record
            return None, None
        record = self._ensure(self.std.cell(bid), pulled_in=True)
        if record.kind != "run":
            return None, None
        return score_baseline_dir(self.std, cell_dir(self.out_dir, bid)).status, record

    # ------------------------------------------------------------------ one cell

    def run(self, cell: Cell) -> dict[str, Any]:
        self._local.events = []
        if cell.carved_out:
            return self._result(cell, None, STRUCTURAL, provisional=False)
        record = self._ensure(cell)
        if record.kind == "stopped":
            return self._result(cell, None, BUDGET_STOP, provisional=False)
        run_dir = cell_dir(self.out_dir, cell.id)
        if cell.is_baseline:
            verdict: CellVerdict | BaselineVerdict = score_baseline_dir(self.std, run_dir)
            return self._result(cell, verdict, outcome_of(verdict), provisional=False)
        status: str | None
        if record.kind == "not_run":
            status = record.note.baseline_status if record.note else "failed"
        else:
            status, _base = self._baseline_status(cell)
        self._judge(cell)
        verdict = score_fault_dir(self.std, cell, run_dir, status)
        return self._result(cell, verdict, outcome_of(verdict), provisional=status is None)

    def _judge(self, cell: Cell) -> None:
        """Soft tier: judge a fault run that ran (once; a kept record keeps its verdict)."""
        if self.judge is not None:
            judge_cell(self.std, cell, self.out_dir, self.judge, self.judge_label)

    def _result(
        self,
        cell: Cell,
        verdict: CellVerdict | BaselineVerdict | None,
        outcome: Outcome,
        *,
        provisional: bool,
    ) -> dict[str, Any]:
        props = cell_properties(cell, verdict, outcome)
        return {
            "cell_id": cell.id,
            "row": cell.row,
            "category": outcome.category,
            "letter": outcome.letter,
            "word": outcome.word + (" (provisional: baseline pending)" if provisional else ""),
            "verdict": outcome.verdict,
            "provisional": provisional,
            "skip": outcome is STRUCTURAL,
            "budget_stop": outcome is BUDGET_STOP,
            "properties": props,
            "events": list(self._events),
            # What the next session's order goes by (SPEC I163): 0 when no run was made.
            "seconds": 0.0 if verdict is None else run_seconds(cell_dir(self.out_dir, cell.id)),
        }


def cell_properties(
    cell: Cell, verdict: CellVerdict | BaselineVerdict | None, outcome: Outcome
) -> list[tuple[str, str]]:
    """A cell's JUnit properties: its coordinates, verdict, gate, funnel, exclusion and
    acts (``results/junit_fields.py``, the same as ``sabot export`` writes). Per testcase
    where the JUnit family allows it (xunit1), in the testcase's system-out otherwise (SPEC
    I48)."""
    from pytest_sabot.results.junit_fields import cell_pairs

    return cell_pairs(cell, verdict, outcome.verdict)


def junit_properties(
    cell: Cell, verdict: CellVerdict | BaselineVerdict | None
) -> list[tuple[str, str]]:
    """Per-testcase JUnit properties of a cell (kept for callers of the earlier name)."""
    outcome = STRUCTURAL if verdict is None else outcome_of(verdict)
    return cell_properties(cell, verdict, outcome)


SIM_JUDGE_LABEL = "fixture of the embedded judge (sim), not a measurement of any model"


def judge_cell(std: Standard, cell: Cell, out_dir: Path, judge: JudgeBackend, label: str) -> None:
    """Soft tier for one recorded fault run: judge its trace once and write soft.json (a run
    already judged keeps its verdict; baselines and unrecorded runs are not judged)."""
    run_dir = cell_dir(out_dir, cell.id)
    if cell.operator is None or not (run_dir / TRACE_FILE).is_file():
        return
    if read_soft_record(run_dir) is not None:
        return
    note = std.private(cell.task).operator(cell.operator).ground_truth
    record = judge_trace(
        judge, read_trace(run_dir), note, cache_dir=out_dir / "judge-cache", label=label
    )
    write_soft(run_dir, record)
