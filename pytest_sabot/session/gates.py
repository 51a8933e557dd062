"""What the session's exit status must say about its results (SPEC I43).

A session does not pass when:

- more than ``--sabot-max-run-errors`` (default 5%) of its recorded cells are RUN_ERROR;
- with ``--sabot-fail-under``: a selected row's Sabot Score is under the threshold, a
  selected row has no valid fault cell (no score can pass a gate), or a selected fault
  cell has no usable baseline (its row's score would stand on fewer cells than selected);
- it did not record its whole selection (interrupted, budget, unwritable output): that is
  pytest's "interrupted" status, whatever the gates say.

Each gate is one row-level result: shown in the summary and, as ``sabot::gate[...]``
test results, in the terminal and the JUnit XML.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_sabot.core.models.verdict import BaselineVerdict
from pytest_sabot.results import ResultsFile

RUN_ERRORS = "run-errors"
BASELINES = "baselines"


@dataclass(frozen=True)
class Gate:
    """One pass/fail check on the session's results."""

    name: str  # a row, or 'run-errors' / 'baselines'
    passed: bool
    message: str
    shown: bool = True  # a passing check that no option asked for is not reported

    @property
    def nodeid(self) -> str:
        return f"sabot::gate[{self.name}]"


def run_error_share(results: ResultsFile) -> tuple[int, int]:
    """(RUN_ERROR cells, recorded cells), baselines and fault cells alike."""
    errors = 0
    for cell in results.cells:
        if isinstance(cell, BaselineVerdict):
            errors += cell.status == "RUN_ERROR"
        elif cell.excluded is not None and cell.excluded.code == "RUN_ERROR":
            errors += 1
    return errors, len(results.cells)


def evaluate(
    results: ResultsFile, fail_under: float | None, max_run_errors: float
) -> list[Gate]:
    gates: list[Gate] = []
    errors, recorded = run_error_share(results)
    share = errors / recorded if recorded else 0.0
    over = share > max_run_errors
    gates.append(
        Gate(
            RUN_ERRORS,
            not over,
            f"{errors} of {recorded} recorded cells are RUN_ERROR ({100 * share:.1f}%); "
            f"--sabot-max-run-errors allows {100 * max_run_errors:g}%",
            shown=over or fail_under is not None,
        )
    )
    if fail_under is None:
        return gates
    by_row = {r.row: r for r in results.scoreboard.rows}
    zeros = set(results.structural_zeros)
    rows = sorted(
        {
            cid.rsplit("-", 3)[0]
            for cid in results.selection.cell_ids
            if _is_fault(cid) and cid not in zeros
        }
    )
    for row in rows:
        summary = by_row.get(row)
        value = None if summary is None else summary.sabot_score.value
        if value is None:
            gates.append(
                Gate(row, False, f"row {row} has no valid fault cell, so no score to gate")
            )
        elif value < fail_under:
            gates.append(Gate(row, False, f"row {row} {value:.3f} < {fail_under:g}"))
        else:
            gates.append(Gate(row, True, f"row {row} {value:.3f} >= {fail_under:g}"))
    unpaired = results.selection.unpaired
    gates.append(
        Gate(
            BASELINES,
            not unpaired,
            (
                f"{len(unpaired)} selected fault cell(s) have no usable baseline "
                f"(e.g. {unpaired[0].cell_id}: {unpaired[0].reason})"
                if unpaired
                else "every scored fault cell has its baseline"
            ),
        )
    )
    return gates


def _is_fault(cell_id: str) -> bool:
    return "-baseline-" not in cell_id


def failures(gates: list[Gate]) -> list[Gate]:
    return [g for g in gates if not g.passed]
