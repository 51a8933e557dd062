"""Running one cell inside a pytest test: resume, skip-on-failed-baseline, run, score.

Returns a plain JSON-able dict (it travels on the test report across xdist). The verdict
computed here is provisional when the cell's baseline had not been recorded yet; the
session's final verdicts are always re-scored from disk once every cell has run, so they
never depend on execution order.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_sabot.adjudicate import (
    baseline_status,
    is_finished,
    record_not_run,
    score_baseline_dir,
    score_fault_dir,
    set_aside,
    unfinished_business,
)
from pytest_sabot.harness.run import RunSettings, cell_dir, run_cell
from pytest_sabot.judge import JudgeBackend
from pytest_sabot.judge.run import judge_trace, read_soft_record, write_soft
from pytest_sabot.models.cells import Cell
from pytest_sabot.models.verdict import BaselineVerdict, CellVerdict
from pytest_sabot.standard import Standard
from pytest_sabot.trace_io import TRACE_FILE, read_trace


@dataclass(frozen=True)
class Outcome:
    """How a cell shows in pytest: category (summary count), letter and verbose word."""

    category: str
    letter: str
    word: str


def funnel_word(v: CellVerdict) -> str:
    """The verbose word: the whole funnel path, e.g. 'DETECTED_HARD REACTED RECOVERED'."""
    parts: list[str] = [v.detection]
    if v.reacted:
        parts.append("REACTED")
    if v.recovered:
        parts.append("RECOVERED")
    return " ".join(parts)


def outcome_of(verdict: CellVerdict | BaselineVerdict) -> Outcome:
    if isinstance(verdict, BaselineVerdict):
        if verdict.status == "passed":
            return Outcome("baseline_pass", "P", "BASELINE_PASS")
        if verdict.status == "RUN_ERROR":
            return Outcome("run_error", "R", "RUN_ERROR (baseline)")
        return Outcome("baseline_failed", "B", "BASELINE_FAIL")
    if verdict.excluded is not None:
        code = verdict.excluded.code
        letter = {"RUN_ERROR": "R", "BASELINE_FAIL": "b", "INJECTION_UNVERIFIED": "I"}[code]
        return Outcome(code.lower(), letter, code)
    letter = {"DETECTED_HARD": "H", "DETECTED_SOFT": "S", "MISSED": "M"}[verdict.detection]
    return Outcome(verdict.detection.lower(), letter, funnel_word(verdict))


STRUCTURAL_ZERO = Outcome("structural_zero", "z", "STRUCTURAL_ZERO (registered, not run)")


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive file lock, so two xdist workers never run the same baseline at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass
class CellRunner:
    std: Standard
    settings: RunSettings
    selected: frozenset[str]
    judge: JudgeBackend | None = None
    judge_label: str = ""

    @property
    def out_dir(self) -> Path:
        return self.settings.out_dir

    def _ensure_ran(self, cell: Cell) -> None:
        """Run a cell unless it already has a complete record. The session clears the
        output directory at its start unless it resumes, so a record found here was made
        by this session or is one that --sabot-resume keeps."""
        with _locked(self.out_dir / "locks" / f"{cell.id}.lock"):
            self._redo_if_unfinished(cell)
            if not is_finished(self.out_dir, cell):
                run_cell(cell, self.std.wave, self.settings)

    def _redo_if_unfinished(self, cell: Cell) -> None:
        if unfinished_business(self.out_dir, cell, self.settings.session):
            set_aside(self.out_dir, cell)

    def _baseline_for(self, cell: Cell) -> str | None:
        status = baseline_status(self.out_dir, self.std, cell)
        if status is not None or cell.baseline_id in self.selected:
            return status
        # The baseline is not part of this session's selection: run it here (once, under a
        # lock) so the fault cell's validity is known rather than assumed.
        baseline = self.std.cell(cell.baseline_id)
        with _locked(self.out_dir / "locks" / f"{baseline.id}.lock"):
            self._redo_if_unfinished(baseline)
            if not is_finished(self.out_dir, baseline):
                run_cell(baseline, self.std.wave, self.settings)
        return baseline_status(self.out_dir, self.std, cell)

    def run(self, cell: Cell) -> dict[str, Any]:
        if cell.carved_out:
            return self._result(cell, None, STRUCTURAL_ZERO, provisional=False)
        if cell.is_baseline:
            self._ensure_ran(cell)
            verdict: CellVerdict | BaselineVerdict = score_baseline_dir(
                self.std, cell_dir(self.out_dir, cell.id)
            )
            return self._result(cell, verdict, outcome_of(verdict), provisional=False)
        status = self._baseline_for(cell)
        with _locked(self.out_dir / "locks" / f"{cell.id}.lock"):
            self._redo_if_unfinished(cell)
            if not is_finished(self.out_dir, cell) and status in ("failed", "RUN_ERROR"):
                record_not_run(self.out_dir, cell, status, self.settings.session)
        self._ensure_ran(cell)
        self._judge(cell)
        verdict = score_fault_dir(self.std, cell, cell_dir(self.out_dir, cell.id), status)
        return self._result(cell, verdict, outcome_of(verdict), provisional=status is None)

    def _judge(self, cell: Cell) -> None:
        """Soft tier: judge a fault run that ran (once; a resumed cell keeps its verdict)."""
        run_dir = cell_dir(self.out_dir, cell.id)
        if self.judge is None or cell.operator is None or not (run_dir / TRACE_FILE).is_file():
            return
        if read_soft_record(run_dir) is not None:
            return
        note = self.std.private(cell.task).operator(cell.operator).ground_truth
        record = judge_trace(
            self.judge,
            read_trace(run_dir),
            note,
            cache_dir=self.out_dir / "judge-cache",
            label=self.judge_label,
        )
        write_soft(run_dir, record)

    def _result(
        self,
        cell: Cell,
        verdict: CellVerdict | BaselineVerdict | None,
        outcome: Outcome,
        *,
        provisional: bool,
    ) -> dict[str, Any]:
        return {
            "cell_id": cell.id,
            "category": outcome.category,
            "letter": outcome.letter,
            "word": outcome.word + (" (provisional: baseline pending)" if provisional else ""),
            "provisional": provisional,
            "properties": junit_properties(cell, verdict),
        }


def junit_properties(
    cell: Cell, verdict: CellVerdict | BaselineVerdict | None
) -> list[tuple[str, str]]:
    """Per-testcase JUnit properties: the cell's coordinates, verdicts, exclusion, acts."""
    props = [
        ("sabot.cell", cell.id),
        ("sabot.framework", cell.framework),
        ("sabot.config", cell.config),
        ("sabot.operator", cell.operator or "baseline"),
        ("sabot.task", cell.task),
        ("sabot.seed", str(cell.seed)),
    ]
    if verdict is None:
        props.append(("sabot.verdict", "STRUCTURAL_ZERO"))
    elif isinstance(verdict, BaselineVerdict):
        props.append(("sabot.verdict", f"BASELINE_{verdict.status.upper()}"))
    else:
        props += [
            ("sabot.verdict", verdict.detection),
            ("sabot.detected_hard", str(verdict.detected_hard).lower()),
            ("sabot.detected_soft", str(verdict.detected_soft).lower()),
            ("sabot.reacted", str(verdict.reacted).lower()),
            ("sabot.recovered", str(verdict.recovered).lower()),
            ("sabot.exclusion", verdict.excluded.code if verdict.excluded else ""),
            ("sabot.acts", ",".join(f"{a.act}@{a.seq}" for a in verdict.acts)),
        ]
    return props
