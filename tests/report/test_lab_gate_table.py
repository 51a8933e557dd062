"""The lab gate table in the terminal: every gate outcome that occurs stays in view at 80
columns, the hung tool's liveness outcome (inconclusive) among them."""

from __future__ import annotations

import io

from rich.console import Console

from pytest_sabot.report.lab import print_gates
from pytest_sabot.results.lab_gates import (
    OUTCOMES,
    GateCell,
    GateOutcome,
    GateRate,
    LabGates,
)


def _group(row: str, fault: str, gates: list[GateOutcome]) -> GateRate:
    cells = [GateCell(cell_id=f"{row}-{fault}-T6-s{21 + i}", gate=g, rules_broken=[],
                      execution="deadline_exceeded" if g == "inconclusive" else "completed",
                      funnel="MISSED" if fault != "baseline" else "passed")
             for i, g in enumerate(gates)]
    counts = {o: gates.count(o) for o in OUTCOMES}
    passed = counts["pass"]
    return GateRate(row=row, fault=fault, outcomes=counts, passed=passed, runs=len(gates),
                    rate=passed / len(gates), ci_low=0.0, ci_high=1.0, cells=cells)


def _table(width: int) -> list[str]:
    gates = LabGates(
        by_row=[_group("autogen-guardrail", "baseline", ["pass", "pass", "pass"]),
                _group("autogen-guardrail", "O12", ["inconclusive", "inconclusive", "fail"])],
        by_fault=[_group("all", "O12", ["pass"] + ["fail"] * 12 + ["inconclusive"] * 18),
                  _group("all", "baseline", ["pass", "error", "no record"])],
    )
    out = io.StringIO()
    print_gates(Console(file=out, width=width, color_system=None), gates)
    return out.getvalue().splitlines()


def test_L_the_gate_table_at_80_columns_shows_each_outcome_that_occurs() -> None:
    lines = _table(80)
    assert max(len(line) for line in lines) <= 80, lines
    header = next(line for line in lines if line.startswith("row "))
    assert "outcomes" in header
    row = next(line for line in lines if line.startswith("autogen-guardrail") and " O12 " in line)
    assert "fail 1 inc 2" in row, row
    base = next(line for line in lines
                if line.startswith("autogen-guardrail") and "baseline" in line)
    assert "pass 3" in base and "inc" not in base
    every = [line for line in lines if line.startswith("all ")]
    assert "pass 1 fail 12 inc 18" in every[0] and "pass 1 err 1 none 1" in every[1], every
    assert any("inc = inconclusive" in line for line in lines)


def test_L_the_gate_table_keeps_the_funnel_where_the_terminal_is_wide() -> None:
    lines = _table(200)
    header = next(line for line in lines if line.startswith("row "))
    assert "outcomes" in header and "funnel" in header
    assert not any("not shown" in line for line in lines)
