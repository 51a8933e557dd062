"""``sabot compare A B [--json]``: the paired comparison of two scored runs or waves
(standard S10.5.3) on the terminal, every table fitted to its width; the comparison itself
is ``pytest_sabot.results.compare``. A and B are run directories, results.json files, or
run ids (or unique prefixes) of the run history."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.text import Text

from pytest_sabot.commands.failure import fail
from pytest_sabot.report.render import ci_text, pp_text, rate_text
from pytest_sabot.report.terminal import Column, console, print_lines, print_table
from pytest_sabot.results.compare import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Comparison,
    OneSidedCell,
    RowComparison,
    RunInfo,
    compare,
)
from pytest_sabot.scoring.aggregate import Rate


def _describe(name: str, info: RunInfo) -> list[str]:
    return [
        f"{name}: {info.path}",
        f"   wave {info.wave}, rules {info.rules}, model {info.model}, "
        f"{info.valid}/{info.fault_cells} fault cells valid",
        f"   {info.label}",
        *([f"   PARTIAL: {info.partial}"] if info.partial else []),
    ]


def _row_line(c: Comparison) -> RowComparison:
    """The 'all rows' line under the table: paired and flipped cells over every row."""
    return RowComparison.model_construct(
        row="all rows", a=None, b=None, paired=c.paired, difference=None, ci_low=None,
        ci_high=None, detected_a_only=c.detected_a_only, detected_b_only=c.detected_b_only,
        one_sided=len(c.one_sided), a_clean_fire=None, b_clean_fire=None,
    )


# The paired table: the row, its difference and interval first; the flips last.
ROW_COLUMNS: tuple[Column[RowComparison], ...] = (
    Column("row", lambda r: r.row, 1),
    Column("A score", lambda r: "" if r.row == "all rows" else rate_text(r.a), 3, "right"),
    Column("B score", lambda r: "" if r.row == "all rows" else rate_text(r.b), 3, "right"),
    Column("paired", lambda r: str(r.paired), 2, "right"),
    Column("B - A", lambda r: "" if r.row == "all rows" else pp_text(r.difference), 1, "right"),
    Column(
        "95% CI",
        lambda r: "" if r.row == "all rows" else ci_text(r.ci_low, r.ci_high),
        1,
        "right",
    ),
    Column("A-only", lambda r: str(r.detected_a_only), 4, "right"),
    Column("B-only", lambda r: str(r.detected_b_only), 4, "right"),
    Column("unpaired", lambda r: str(r.one_sided), 5, "right"),
)


def _header(c: Comparison) -> list[str]:
    lines = ["Sabot paired comparison (hard tier, B - A; cells paired by framework, config, "
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
    return lines


def print_comparison(out: Console, c: Comparison) -> None:
    """The comparison on the console, every table fitted to its width."""
    print_lines(out, _header(c))
    out.print(Text(""))
    print_table(out, ROW_COLUMNS, [*c.rows, _row_line(c)], "--json prints every figure")
    print_lines(out, [
        "",
        "A/B score: each file's published Sabot Score (its own valid cells); B - A and its "
        "CI: over the paired cells only",
        "A-only / B-only: paired cells DETECTED_HARD in that run only (flips); unpaired: "
        "cells valid in one run only",
        f"interval: {c.interval}",
    ])
    _print_clean_fire(out, c)
    print_lines(out, _prediction_lines(c))
    if c.one_sided:
        out.print(Text(""))
        out.print(Text(f"cells valid in one run only ({len(c.one_sided)}):"))
        print_table(out, ONE_SIDED_COLUMNS, c.one_sided)
    else:
        out.print(Text("cells valid in one run only: none"))
    out.print(Text("a gate on a drop between two runs of one registration: sabot regress A B "
                   "(exit 1 when a row dropped beyond its interval)"))


def render_text(c: Comparison, width: int = 200) -> list[str]:
    """The comparison as the terminal shows it at ``width`` columns."""
    out = console(width)
    with out.capture() as captured:
        print_comparison(out, c)
    return [line.rstrip() for line in captured.get().splitlines()]


def _clean(r: Rate | None) -> str:
    if r is None:
        return "no row"
    if r.value is None:
        return "n/a (not scored)"
    return f"{100 * r.value:.1f}% ({r.k}/{r.n})"


CLEAN_COLUMNS: tuple[Column[RowComparison], ...] = (
    Column("row", lambda r: r.row, 1),
    Column("A score", lambda r: rate_text(r.a), 2, "right"),
    Column("A clean-run", lambda r: _clean(r.a_clean_fire), 1, "right"),
    Column("B score", lambda r: rate_text(r.b), 2, "right"),
    Column("B clean-run", lambda r: _clean(r.b_clean_fire), 1, "right"),
)
ONE_SIDED_COLUMNS: tuple[Column[OneSidedCell], ...] = (
    Column("cell", lambda c: c.cell_id, 1),
    Column("valid in", lambda c: c.valid_in, 1),
    Column("the other run", lambda c: c.other, 1),
)


def _print_clean_fire(out: Console, c: Comparison) -> None:
    fixture = " (fixture numbers of the embedded model)" if c.a.fixture or c.b.fixture else ""
    print_lines(out, [
        "",
        "clean-run firing: no-fault baselines with >= 1 hard-tier act, beside each Sabot "
        f"Score (SPEC I27){fixture}",
    ])
    print_table(out, CLEAN_COLUMNS, c.rows)


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
    """``sabot compare A B``: a report, not a gate. Exits 0 when the runs were compared, 3
    when either did not record its whole selection (its numbers cover its recorded cells
    only), 2 on bad input; ``sabot regress`` is the gate on a regression. Two lab runs
    (run.json, or lab run ids) are compared by :mod:`pytest_sabot.commands.lab_compare`
    instead, whose exit is 1 when B regresses against A."""
    from pytest_sabot.core.exit_codes import EXIT_INCONCLUSIVE, EXIT_PASS
    from pytest_sabot.history import chosen_history
    from pytest_sabot.history.queries import load_compare_input
    from pytest_sabot.history.store import DEFAULT_TIMEOUT_S

    resamples = DEFAULT_RESAMPLES if args.resamples is None else args.resamples
    seed = DEFAULT_SEED if args.seed is None else args.seed
    if resamples < 1:
        return fail("sabot compare", "--resamples must be at least 1")
    history = chosen_history(getattr(args, "history", None))
    wait = getattr(args, "wait", None)
    timeout = DEFAULT_TIMEOUT_S if wait is None else float(wait)
    from pytest_sabot.commands.lab_compare import cmd_lab_compare, is_lab_input

    if is_lab_input(args.a, history, timeout) or is_lab_input(args.b, history, timeout):
        return cmd_lab_compare(args.a, args.b, as_json=args.json, history=history,
                               timeout=timeout)
    (a, source_a), (b, source_b) = (
        load_compare_input(args.a, history, timeout=timeout),
        load_compare_input(args.b, history, timeout=timeout),
    )
    report = compare(a, b, a_path=_named(args.a, source_a), b_path=_named(args.b, source_b),
                     resamples=resamples, seed=seed)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print_comparison(console(), report)
    incomplete = [name for name, r in (("A", a), ("B", b)) if not r.selection.complete]
    if incomplete:
        whose = "its" if len(incomplete) == 1 else "their"
        return fail("sabot compare", f"{' and '.join(incomplete)} did not record {whose} "
                    "whole selection: the comparison covers the recorded cells only "
                    "(inconclusive, exit 3)", EXIT_INCONCLUSIVE)
    return EXIT_PASS


def _named(arg: str, source: str) -> str:
    """How an input is named in the report: the path given, or the run id and the file
    its results were read from."""
    return arg if Path(arg).exists() else f"{arg} ({source})"


__all__ = ["cmd_compare", "print_comparison", "render_text"]
