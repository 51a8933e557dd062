"""Regression between two runs of one registration: a pure function of two results.

The rule, stated once (:data:`REGRESSION_RULE`) and printed with every verdict:

* A and B must be runs of the same registration: the same ``registration_hash`` (the
  cells/, tasks/ and mappings/ files) and the same wave. Otherwise nothing is compared and
  the outcome is *inconclusive* (exit 3): a drop between different registrations may be
  the registration's doing.
* Per scoreboard row, the fault cells valid in both runs are paired by (framework,
  config, operator, task, seed), exactly as ``sabot compare`` pairs them (standard
  S10.5.3: comparisons are paired), and the difference B - A of DETECTED_HARD gets the
  same seeded 95% paired percentile bootstrap interval (:func:`pytest_sabot.compare.compare`
  computes both; nothing is recomputed here).
* A row **regressed** when that interval lies entirely below zero (its upper bound < 0):
  B's Sabot Score dropped beyond the interval of the paired difference. A row whose
  interval lies entirely above zero improved; any other row shows no regression.
* A row with fewer than ``min_paired`` paired cells is *not tested*: with so few pairs
  the percentile interval takes few distinct values and collapses to a point when every
  pair moves alike (one cell that flips gives the interval [-1, -1]), which is no
  interval at all. Such rows never make a regression; if no row is tested the outcome is
  inconclusive.

Exit codes (the sabot commands' four, SPEC I43): 1 a regression, 0 none (at least one row
tested), 3 inconclusive (different registrations, or no row with enough paired cells);
2 (bad input, a damaged or locked history) is the caller's. Keyless inputs carry their
fixture label in every output: a regression between fixtures is a difference between
fixtures of the embedded model, not a measurement of any LLM.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pytest_sabot.core.exit_codes import EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_PASS
from pytest_sabot.core.models.base import FrozenModel, fields_of
from pytest_sabot.results import ResultsFile
from pytest_sabot.results.compare import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Comparison,
    PairedRow,
    ResultsIdentity,
    compare,
)

DEFAULT_MIN_PAIRED = 5

REGRESSION_RULE = (
    "a row regressed when, over its fault cells valid in both runs (paired by framework, "
    "config, operator, task and seed), the 95% paired bootstrap interval of B - A in "
    "DETECTED_HARD lies entirely below zero (upper bound < 0): the Sabot Score dropped "
    "beyond its interval; rows with fewer than {min_paired} paired cells are not tested; "
    "runs of different registration hashes or waves are not compared"
)

RowStatus = Literal["regression", "improvement", "no regression", "not tested"]
Outcome = Literal["regression", "no regression", "inconclusive"]


class RunRef(ResultsIdentity):
    """One side of the check, as its results describe it."""

    name: str = Field(description="How it was named: a run id or a path.")
    run_id: str | None = Field(description="The session's run id, when it has one.")
    source: str = Field(description="Where its results were read.")
    complete: bool = Field(description="Its session recorded its whole selection.")


class RowCheck(PairedRow):
    """One scoreboard row checked for a regression."""

    status: RowStatus = Field(
        description="The reading: regression, improvement, no regression or not tested."
    )
    why: str = Field(description="The reading, in words.")


class RegressionReport(FrozenModel):
    """What ``regress A B`` decides (its ``--json`` output)."""

    outcome: Outcome
    exit_code: int = Field(description="1 regression, 0 none, 3 inconclusive.")
    rule: str = Field(description="The rule applied, in words.")
    a: RunRef
    b: RunRef
    reasons: list[str] = Field(description="Why the outcome is what it is.")
    warnings: list[str] = Field(description="What to keep in mind reading it.")
    rows: list[RowCheck]
    resamples: int
    seed: int
    min_paired: int
    interval: str = Field("", description="How the interval is computed.")


def _ref(results: ResultsFile, name: str, source: str) -> RunRef:
    return RunRef(
        **fields_of(ResultsIdentity, results),
        name=name,
        run_id=results.session.run_id if results.session else None,
        source=source,
        complete=results.selection.complete,
    )


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f} pp"


def _row(comparison: Comparison, min_paired: int) -> list[RowCheck]:
    out: list[RowCheck] = []
    for r in comparison.rows:
        status: RowStatus
        if r.paired < min_paired or r.ci_low is None or r.ci_high is None:
            status = "not tested"
            why = f"{r.paired} paired cell(s), fewer than {min_paired}"
        elif r.ci_high < 0:
            status = "regression"
            why = (f"B - A {_pct(r.difference)}, 95% CI [{_pct(r.ci_low)}, "
                   f"{_pct(r.ci_high)}] entirely below zero over {r.paired} paired cells")
        elif r.ci_low > 0:
            status = "improvement"
            why = (f"B - A {_pct(r.difference)}, 95% CI [{_pct(r.ci_low)}, "
                   f"{_pct(r.ci_high)}] entirely above zero over {r.paired} paired cells")
        else:
            status = "no regression"
            why = (f"B - A {_pct(r.difference)}, 95% CI [{_pct(r.ci_low)}, "
                   f"{_pct(r.ci_high)}] includes zero over {r.paired} paired cells")
        out.append(RowCheck(**fields_of(PairedRow, r), status=status, why=why))
    return out


def detect_regressions(
    a: ResultsFile,
    b: ResultsFile,
    *,
    a_name: str = "A",
    b_name: str = "B",
    a_source: str = "",
    b_source: str = "",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    min_paired: int = DEFAULT_MIN_PAIRED,
) -> RegressionReport:
    """Whether B regressed from A (A the reference, B the run under test). Pure."""
    if min_paired < 1:
        raise ValueError("min_paired must be at least 1")
    ref_a, ref_b = _ref(a, a_name, a_source or a_name), _ref(b, b_name, b_source or b_name)
    rule = REGRESSION_RULE.format(min_paired=min_paired)
    warnings: list[str] = []
    if a.fixture or b.fixture:
        which = "A and B are" if a.fixture and b.fixture else ("A is" if a.fixture else "B is")
        warnings.append(
            f"{which} keyless: fixtures of the embedded model, not measurements of any LLM; "
            "a difference involving them is a difference between fixtures"
        )
    for side, ref in (("A", ref_a), ("B", ref_b)):
        if not ref.complete:
            warnings.append(
                f"{side}'s session did not record its whole selection: only its recorded "
                "cells are compared"
            )
    different = []
    if a.registration_hash != b.registration_hash:
        different.append(
            f"registration_hash differs (A {a.registration_hash[:16]}, B "
            f"{b.registration_hash[:16]}): the cells/, tasks/ or mappings/ files are not "
            "the same"
        )
    if a.wave != b.wave:
        different.append(f"wave differs (A {a.wave}, B {b.wave})")
    if different:
        return RegressionReport(
            outcome="inconclusive", exit_code=EXIT_INCONCLUSIVE, rule=rule, a=ref_a, b=ref_b,
            reasons=[
                "not runs of the same registration, so not compared: " + "; ".join(different)
            ],
            warnings=warnings, rows=[], resamples=resamples, seed=seed,
            min_paired=min_paired,
        )
    comparison = compare(
        a, b, a_path=a_name, b_path=b_name, resamples=resamples, seed=seed, reviewer=set()
    )
    for m in comparison.mismatches:
        warnings.append(f"A and B differ in {m.field} ({m.meaning}): A {m.a}, B {m.b}")
    rows = _row(comparison, min_paired)
    regressed = [r.row for r in rows if r.status == "regression"]
    tested = [r for r in rows if r.status != "not tested"]
    untested = [r.row for r in rows if r.status == "not tested"]
    reasons: list[str] = []
    outcome: Outcome
    if regressed:
        outcome, code = "regression", EXIT_GATE
        reasons.append(f"regressed: {', '.join(regressed)}")
    elif tested:
        outcome, code = "no regression", EXIT_PASS
        reasons.append(f"no row regressed among the {len(tested)} tested")
    else:
        outcome, code = "inconclusive", EXIT_INCONCLUSIVE
        reasons.append(
            f"no row has {min_paired} or more fault cells valid in both runs, so none could "
            "be tested"
        )
    if untested and tested:
        reasons.append(f"not tested (too few paired cells): {', '.join(untested)}")
    return RegressionReport(
        outcome=outcome, exit_code=code, rule=rule, a=ref_a, b=ref_b, reasons=reasons,
        warnings=warnings, rows=rows, resamples=resamples, seed=seed, min_paired=min_paired,
        interval=comparison.interval,
    )


__all__ = [
    "DEFAULT_MIN_PAIRED",
    "REGRESSION_RULE",
    "RegressionReport",
    "RowCheck",
    "RunRef",
    "detect_regressions",
]
