"""``sabot compare A B [--json]``: the paired comparison of two scored runs or waves
(standard S10.5.3) as text; the comparison itself is ``pytest_sabot.results.compare``."""

from __future__ import annotations

import argparse
import sys

from pytest_sabot.results.compare import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Comparison,
    RowComparison,
    RunInfo,
    compare,
    load_side,
)
from pytest_sabot.scoring.aggregate import Rate


def _score(r: Rate | None) -> str:
    if r is None:
        return "no row"
    if r.value is None:
        return f"n/a ({r.k}/{r.n})"
    return f"{100 * r.value:.1f}% ({r.k}/{r.n})"


def _pp(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f} pp"


def _ci(row: RowComparison) -> str:
    if row.ci_low is None or row.ci_high is None:
        return "n/a"
    return f"[{100 * row.ci_low:+.1f}, {100 * row.ci_high:+.1f}]"


def _describe(name: str, info: RunInfo) -> list[str]:
    return [
        f"{name}: {info.path}",
        f"   wave {info.wave}, rules {info.rules}, model {info.model}, "
        f"{info.valid}/{info.fault_cells} fault cells valid",
        f"   {info.label}",
    ]


def render_text(c: Comparison) -> list[str]:
    """The comparison as terminal lines."""
    lines = ["Sabot paired comparison (hard tier, B - A; cells paired by framework, config,",
             "operator, task and seed)"]
    lines += _describe("A", c.a) + _describe("B", c.b)
    if c.a.fixture or c.b.fixture:
        both = c.a.fixture and c.b.fixture
        keyless = "A and B are" if both else ("A is" if c.a.fixture else "B is")
        lines.append(
            f"note: {keyless} keyless: fixtures of the embedded model, not measurements; "
            "any difference involving them is a difference between fixtures"
        )
    for m in c.mismatches:
        a, b = (m.a[:16], m.b[:16]) if m.field == "registration_hash" else (m.a, m.b)
        lines.append(f"warning: A and B differ in {m.field} ({m.meaning}): A {a}, B {b}")
    lines.append("")
    header = (
        f"{'row':<20}{'A score':>16}{'B score':>16}{'paired':>8}{'B - A':>11}"
        f"{'95% CI':>18}{'A-only':>8}{'B-only':>8}{'unpaired':>10}"
    )
    lines.append(header)
    for r in c.rows:
        lines.append(
            f"{r.row:<20}{_score(r.a):>16}{_score(r.b):>16}{r.paired:>8}"
            f"{_pp(r.difference):>11}{_ci(r):>18}{r.detected_a_only:>8}{r.detected_b_only:>8}"
            f"{r.one_sided:>10}"
        )
    lines.append(
        f"{'all rows':<20}{'':>16}{'':>16}{c.paired:>8}{'':>11}{'':>18}"
        f"{c.detected_a_only:>8}{c.detected_b_only:>8}{len(c.one_sided):>10}"
    )
    lines.append("")
    lines.append(
        "A/B score: each file's published Sabot Score (its own valid cells); B - A and its "
        "CI: over the paired cells only"
    )
    lines.append(
        "A-only / B-only: paired cells DETECTED_HARD in that run only (flips); unpaired: "
        "cells valid in one run only"
    )
    lines.append(f"interval: {c.interval}")
    lines += _clean_fire_lines(c)
    lines += _prediction_lines(c)
    if c.one_sided:
        lines.append("")
        lines.append(f"cells valid in one run only ({len(c.one_sided)}):")
        for cell in c.one_sided:
            lines.append(f"  {cell.cell_id:<36} valid in {cell.valid_in}; other run: {cell.other}")
    else:
        lines.append("cells valid in one run only: none")
    return lines


def _clean(r: Rate | None) -> str:
    if r is None:
        return "no row"
    if r.value is None:
        return "n/a (not scored)"
    return f"{100 * r.value:.1f}% ({r.k}/{r.n})"


def _clean_fire_lines(c: Comparison) -> list[str]:
    fixture = " (fixture numbers of the embedded model)" if c.a.fixture or c.b.fixture else ""
    lines = [
        "",
        "clean-run firing: no-fault baselines with >= 1 hard-tier act, beside each Sabot "
        f"Score (SPEC I27){fixture}",
        f"{'row':<20}{'A score':>16}{'A clean-run':>20}{'B score':>16}{'B clean-run':>20}",
    ]
    for r in c.rows:
        lines.append(
            f"{r.row:<20}{_score(r.a):>16}{_clean(r.a_clean_fire):>20}"
            f"{_score(r.b):>16}{_clean(r.b_clean_fire):>20}"
        )
    return lines


def _prediction_lines(c: Comparison) -> list[str]:
    lines = ["", "Pre-registered predictions (standard 10.8; SPEC I28)"]
    if c.predictions is None:
        return [*lines, f"  not evaluated: {c.predictions_note}"]
    lines.append(f"  {c.predictions_note}; every status is printed alike, a null result too")
    if c.a.fixture or c.b.fixture:
        lines.append("  keyless inputs: these statuses describe fixtures of the embedded model")
    for p in c.predictions:
        lines.append(f"  {p.id}  {p.status.upper():<10}  {p.statement}")
        lines.append(f"        {p.basis}")
        lines.append(f"        rule: {p.criterion}")
    return lines


def cmd_compare(args: argparse.Namespace) -> int:
    """``sabot compare``: exits 0 whatever the difference (2 on bad input)."""
    from pytest_sabot.commands import EXIT_ERROR, EXIT_PASS

    resamples = DEFAULT_RESAMPLES if args.resamples is None else args.resamples
    seed = DEFAULT_SEED if args.seed is None else args.seed
    if resamples < 1:
        print("sabot compare: --resamples must be at least 1", file=sys.stderr)
        return EXIT_ERROR
    a, b = load_side(args.a), load_side(args.b)
    report = compare(a, b, a_path=str(args.a), b_path=str(args.b), resamples=resamples, seed=seed)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        for line in render_text(report):
            print(line)
    return EXIT_PASS


__all__ = ["cmd_compare", "render_text"]
