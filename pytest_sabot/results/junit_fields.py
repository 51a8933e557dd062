"""The ``sabot.*`` fields of a run's JUnit XML, built once for the session's own XML
(``session/junit.py``, SPEC I48) and for ``sabot export --format junit`` (SPEC I80), so a
dashboard fed either sees the same testcase names and the same fields.

- A cell's testcase is named as pytest names it, ``test_cell[<cell id>]``, with the
  classname ``sabot.wave<N>.<row>``.
- Its fields: its coordinates, its verdict and gate and, for a fault cell, the funnel, the
  exclusion and the acts found.
- The suite's fields: the run (wave, rules, model, label, run id, status, selection,
  registration), the off-pin packages and, per row, the score, the valid runs, the clean-run
  firing and the baselines that passed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_sabot.core.models.cells import CellCoordinates, parse_cell_id
from pytest_sabot.core.models.verdict import BaselineVerdict, CellVerdict
from pytest_sabot.results.outcomes import cell_gate, funnel_word

if TYPE_CHECKING:
    from pytest_sabot.core.models.cells import Cell
    from pytest_sabot.results.build import ResultsFile

Pairs = list[tuple[str, str]]

CELL_TEST = "test_cell"


def case_name(cell_id: str) -> str:
    """A cell's testcase name, as pytest reports the cell's test."""
    return f"{CELL_TEST}[{cell_id}]"


def classname(wave: int, row: str) -> str:
    """A cell's testcase classname: a dashboard groups a row's cells under it."""
    return f"sabot.wave{wave}.{row}"


def _place_pairs(where: Cell | CellCoordinates | CellVerdict | BaselineVerdict,
                 word: str) -> Pairs:
    """A cell's coordinates and ``word`` (the verdict as the reports spell it)."""
    cid = where.cell_id if isinstance(where, CellVerdict | BaselineVerdict) else where.id
    return [
        ("sabot.cell", cid),
        ("sabot.row", where.row),
        ("sabot.framework", where.framework),
        ("sabot.config", where.config),
        ("sabot.operator", getattr(where, "operator", None) or "baseline"),
        ("sabot.task", where.task),
        ("sabot.seed", str(where.seed)),
        ("sabot.verdict", word),
    ]


def cell_pairs(
    where: Cell | CellVerdict | BaselineVerdict,
    verdict: CellVerdict | BaselineVerdict | None,
    word: str,
) -> Pairs:
    """A cell's fields: its coordinates (read from the cell or its verdict), ``word`` and,
    with a verdict, its gate and, for a fault cell, the funnel, the exclusion and the
    acts."""
    pairs = _place_pairs(where, word)
    if verdict is not None:
        pairs.append(("sabot.gate", cell_gate(verdict) or ""))
    if isinstance(verdict, CellVerdict):
        pairs += [
            ("sabot.detected_hard", str(verdict.detected_hard).lower()),
            ("sabot.detected_soft", str(verdict.detected_soft).lower()),
            ("sabot.reacted", str(verdict.reacted).lower()),
            ("sabot.recovered", str(verdict.recovered).lower()),
            ("sabot.funnel", verdict.excluded.code if verdict.excluded else funnel_word(verdict)),
            ("sabot.exclusion", verdict.excluded.code if verdict.excluded else ""),
            ("sabot.acts", ",".join(f"{a.act}@{a.seq}" for a in verdict.acts)),
        ]
    why = _reason(verdict)
    if why:
        pairs.append(("sabot.reason", why))
    return pairs


def _reason(verdict: CellVerdict | BaselineVerdict | None) -> str:
    """Why a baseline did not pass or a fault run was excluded (its first line), so a
    dashboard tells a pipeline that raised from one that failed its task: empty otherwise."""
    if isinstance(verdict, BaselineVerdict) and verdict.status != "passed":
        text = verdict.reason
    elif isinstance(verdict, CellVerdict) and verdict.excluded is not None:
        text = verdict.excluded.reason
    else:
        return ""
    return (text.strip().splitlines() or [""])[0]


def id_pairs(cell_id: str, word: str) -> Pairs:
    """The fields of a cell known only by its id (a structural zero, a cell not run): the
    coordinates its id spells and ``word``."""
    where = parse_cell_id(cell_id)
    if where is None:
        return [("sabot.cell", cell_id), ("sabot.verdict", word)]
    return _place_pairs(where, word)


def suite_pairs(results: ResultsFile, run_id: str) -> Pairs:
    """The suite's fields of a run's results."""
    session = results.session
    pairs = [
        ("sabot.wave", str(results.wave)),
        ("sabot.rules", results.rules),
        ("sabot.model", results.model),
        ("sabot.label", results.label),
        ("sabot.run_id", run_id),
        ("sabot.status", session.status if session else
         ("complete" if results.selection.complete else "incomplete")),
        ("sabot.complete", str(results.selection.complete).lower()),
        ("sabot.selected", str(results.selection.selected)),
        ("sabot.recorded", str(results.selection.recorded)),
        ("sabot.pulled_in", ",".join(results.selection.pulled_in)),
        ("sabot.registration_hash", results.registration_hash),
        *[(f"sabot.off_pin.{key}", value) for key, value in sorted(results.off_pin.items())],
    ]
    for row in results.scoreboard.rows:
        pairs += row.junit_properties()  # score, valid, clean-run firing rate
        passed = row.baselines.get("passed", 0)
        pairs.append((f"sabot.baselines.{row.row}", f"{passed}/{sum(row.baselines.values())}"))
    return pairs


__all__ = ["CELL_TEST", "case_name", "cell_pairs", "classname", "id_pairs", "suite_pairs"]
