"""``sabot compare A B`` and ``sabot lab compare A B`` of two lab runs: each a run.json,
the folder holding one, or the id (or a unique prefix) of a lab run in the run history.

Exit 0 when B does not regress against A, 1 when it does (its gate got worse, or it breaks
a rule A did not: SPEC I142), 2 for bad input (the message names the file and the field).
"""

from __future__ import annotations

from pathlib import Path

from pytest_sabot.commands.failure import fail
from pytest_sabot.commands.lab_refs import lab_run_of
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.exit_codes import EXIT_GATE, EXIT_PASS
from pytest_sabot.lab.compare import LabComparison, compare_lab
from pytest_sabot.lab.record import LabRun
from pytest_sabot.report.lab import comparison_text

EXPECTED = ("a lab run: its run.json, the folder holding it, or its run id in the history")


def _load(ref: str, history: Path | None, timeout: float) -> tuple[LabRun, str]:
    found = lab_run_of(ref, history, timeout=timeout)
    if found is None:
        problem = ("a scored run (results.json), not a lab run" if Path(ref).exists()
                   else "no such file, and no lab run with that id in the history"
                   + (f" {history}" if history else ""))
        raise SabotDataError(ref, "", EXPECTED, problem)
    record, source, _folder = found
    return record, ref if Path(ref).exists() else f"{ref} ({source})"


def lab_comparison(a: str, b: str, history: Path | None, *, timeout: float = 15.0) -> (
        LabComparison):
    """The comparison of the lab runs ``a`` and ``b`` name (SabotDataError for bad input)."""
    (ra, na), (rb, nb) = _load(a, history, timeout), _load(b, history, timeout)
    return compare_lab(ra, rb, a_name=na, b_name=nb)


def cmd_lab_compare(a: str, b: str, *, as_json: bool = False, history: Path | None = None,
                    timeout: float = 15.0, prog: str = "sabot compare") -> int:
    """0 no regression, 1 B regressed against A, 2 bad input."""
    try:
        c = lab_comparison(a, b, history, timeout=timeout)
    except SabotDataError as exc:
        return fail(prog, exc)
    print(c.model_dump_json(indent=2) if as_json else comparison_text(c))
    return EXIT_GATE if c.regressed else EXIT_PASS


def is_lab_input(ref: str, history: Path | None, timeout: float = 15.0) -> bool:
    """Whether ``ref`` names a lab run (so ``sabot compare`` compares lab runs)."""
    try:
        return lab_run_of(ref, history, timeout=timeout) is not None
    except SabotDataError:
        return Path(ref).suffix == ".json" and Path(ref).name != "results.json"


__all__ = ["cmd_lab_compare", "is_lab_input", "lab_comparison"]
