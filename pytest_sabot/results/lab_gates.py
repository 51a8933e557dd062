"""The lab gate beside the Sabot funnel: gate rates of a lab matrix per row and fault.

Every cell of a lab matrix leaves two records in its directory: the Sabot trace (scored
into the funnel like any cell) and the lab record ``run.json`` (the four evidence streams
and the lab gate, docs/LAB.md). This module reads the gate of every counted cell and
tabulates it per (row, fault) and per fault over all rows: the raw outcomes (pass, fail,
error, inconclusive, and ``no record`` for a counted cell whose lab record is missing),
the pass numerator and denominator with a Wilson 95% interval, and each cell's gate and
funnel side by side. No outcome is dropped: an error or an inconclusive run stays in the
denominator and in its own column (docs/LAB.md, L-readings). The terminal and RESULTS.md
render it with :mod:`pytest_sabot.report.lab`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field

from pytest_sabot.core.models.base import StrictModel
from pytest_sabot.core.models.verdict import BaselineVerdict, CellVerdict
from pytest_sabot.core.records import cell_dir
from pytest_sabot.scoring.stats import wilson

GateOutcome = Literal["pass", "fail", "error", "inconclusive", "no record"]
OUTCOMES: tuple[GateOutcome, ...] = ("pass", "fail", "error", "inconclusive", "no record")
RUN_FILE = "run.json"


class GateCell(StrictModel):
    """One counted cell: its lab gate and its Sabot funnel, side by side."""

    cell_id: str
    gate: GateOutcome = Field(description="The lab gate ('no record': run.json is missing).")
    rules_broken: list[str] = Field(description="The lab rules the run broke (LC*, LS*).")
    execution: str = Field(description="How the lab run ended ('completed', ...), or ''.")
    funnel: str = Field(
        description="The Sabot verdict: an exclusion code, the detection tier with REACTED "
        "and RECOVERED, or a baseline's 'passed'/'failed'."
    )


class GateRate(StrictModel):
    """The lab gate over one (row, fault) group of counted cells."""

    row: str = Field(description="'<framework>-<config>', or 'all' for every row.")
    fault: str = Field(description="The operator (O7..O11) or 'baseline'.")
    outcomes: dict[str, int] = Field(description="Cells per gate outcome (every outcome).")
    passed: int = Field(description="Numerator: cells whose gate passed.")
    runs: int = Field(description="Denominator: every counted cell of the group.")
    rate: float | None = Field(description="passed / runs (None when runs is 0).")
    ci_low: float | None = Field(description="Wilson 95% interval, low end.")
    ci_high: float | None = Field(description="Wilson 95% interval, high end.")
    cells: list[GateCell] = Field(description="Every cell of the group, gate and funnel.")


class LabGates(StrictModel):
    """results.json ``lab_gates``: the lab gate of a lab matrix per row and fault."""

    note: str = Field(
        "gate rate = cells whose lab gate passed / every counted cell; error, inconclusive "
        "and missing lab records stay in the denominator",
        description="How to read the rates.",
    )
    by_row: list[GateRate] = Field(description="One entry per (row, fault), rows in order.")
    by_fault: list[GateRate] = Field(description="One entry per fault over every row.")


def funnel_text(verdict: CellVerdict | BaselineVerdict) -> str:
    if isinstance(verdict, BaselineVerdict):
        return verdict.status
    if verdict.excluded is not None:
        return str(verdict.excluded.code)
    parts = [str(verdict.detection)]
    parts += ["REACTED"] if verdict.reacted else []
    parts += ["RECOVERED"] if verdict.recovered else []
    return " ".join(parts)


def gate_cell(out_dir: Path, verdict: CellVerdict | BaselineVerdict) -> GateCell:
    from pytest_sabot.lab.record import read_run  # only a lab wave has run records

    path = cell_dir(out_dir, verdict.cell_id) / RUN_FILE
    funnel = funnel_text(verdict)
    if not path.is_file():
        return GateCell(cell_id=verdict.cell_id, gate="no record", rules_broken=[],
                        execution="", funnel=funnel)
    record = read_run(path)
    return GateCell(
        cell_id=verdict.cell_id,
        gate=record.gate.outcome,
        rules_broken=sorted({v.rule for v in record.gate.violations}),
        execution=record.execution.status,
        funnel=funnel,
    )


def _rate(row: str, fault: str, cells: list[GateCell]) -> GateRate:
    counts = {o: sum(1 for c in cells if c.gate == o) for o in OUTCOMES}
    passed, runs = counts["pass"], len(cells)
    interval = wilson(passed, runs)
    return GateRate(
        row=row, fault=fault, outcomes=counts, passed=passed, runs=runs,
        rate=passed / runs if runs else None,
        ci_low=interval.low if interval else None,
        ci_high=interval.high if interval else None,
        cells=cells,
    )


def _fault(verdict: CellVerdict | BaselineVerdict) -> str:
    return verdict.operator if isinstance(verdict, CellVerdict) else "baseline"


def lab_gates(
    out_dir: Path, verdicts: Sequence[CellVerdict | BaselineVerdict], faults: Sequence[str]
) -> LabGates:
    """The gate table of the counted ``verdicts`` (faults in the matrix's order, the
    baseline first)."""
    order = ["baseline", *faults]
    rows = list(dict.fromkeys(v.row for v in verdicts))
    cells = {v.cell_id: gate_cell(out_dir, v) for v in verdicts}
    by_row: list[GateRate] = []
    for row in rows:
        for fault in order:
            group = [cells[v.cell_id] for v in verdicts if v.row == row and _fault(v) == fault]
            if group:
                by_row.append(_rate(row, fault, group))
    by_fault = [
        _rate("all", fault, [cells[v.cell_id] for v in verdicts if _fault(v) == fault])
        for fault in order
        if any(_fault(v) == fault for v in verdicts)
    ]
    return LabGates(by_row=by_row, by_fault=by_fault)
