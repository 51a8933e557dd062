"""Tables that fit the terminal, for every ``sabot`` command that prints one.

A table is a list of :class:`Column` s, each with a priority: when the widest values of
every column cannot fit the console's width, the columns of the highest priority number
are left out first (priority 1 always stays), and the caller prints which were left out.
What remains is drawn by rich, which shrinks a column with an ellipsis if it still must;
free text wraps at the width. The width is the terminal's, or ``$COLUMNS`` when the
output is not a terminal (80 when neither says).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pytest_sabot.results import ResultsFile
from pytest_sabot.results.model_calls import refusal_lines
from pytest_sabot.scoring.aggregate import RowSummary

T = TypeVar("T")
Justify = Literal["left", "right"]

# A priority-1 column keeps at least this many characters, so an id stays readable.
KEPT_MIN_WIDTH = 27


def console(width: int | None = None) -> Console:
    """A console for a command's output: the terminal's width (or ``width``; $COLUMNS when
    not a terminal), no colour guessed from the content, long lines wrapped."""
    return Console(width=width, highlight=False, soft_wrap=False)


@dataclass(frozen=True)
class Column(Generic[T]):
    """One column: its header, how a row shows in it, and how dispensable it is."""

    header: str
    value: Callable[[T], str]
    priority: int  # 1 is always kept; higher numbers are dropped first
    justify: Justify = "left"


def _needed(columns: Sequence[Column[T]], items: Sequence[T]) -> int:
    return sum(max([len(c.header)] + [len(c.value(i)) for i in items]) + 2 for c in columns)


def fit_columns(columns: Sequence[Column[T]], items: Sequence[T], width: int) -> list[Column[T]]:
    """The columns that fit ``width``: the lowest-priority ones (the last of them first)
    are left out until the widest values fit."""
    kept = list(columns)
    while _needed(kept, items) > width and any(c.priority > 1 for c in kept):
        worst = max(c.priority for c in kept)
        kept.remove([c for c in kept if c.priority == worst][-1])
    return kept


def _shrunk(widths: list[int], floors: list[int], room: int) -> list[int]:
    """``widths`` made to fit ``room`` by narrowing the widest column one character at a
    time, never below its floor (as narrow as they may go when even that is too wide)."""
    widths = list(widths)
    while sum(widths) > room:
        shrinkable = [i for i, w in enumerate(widths) if w > floors[i]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1
    return widths


def fitted_table(
    columns: Sequence[Column[T]], items: Sequence[T], width: int | None = None
) -> Table:
    """A borderless table of ``items`` in ``columns`` (already fitted). Given the
    terminal's ``width``, each column gets a width of its own: the widest values are cut
    (with an ellipsis) before any column is lost off the edge."""
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    widest = [max([len(c.header)] + [len(c.value(i)) for i in items]) for c in columns]
    widths: list[int | None] = list(widest)
    if width is not None:
        floors = [min(w, max(len(c.header), KEPT_MIN_WIDTH if c.priority == 1 else 1))
                  for c, w in zip(columns, widest, strict=True)]
        room = width - 2 * (len(columns) - 1)
        # the kept columns' usual floor first; on a very narrow terminal, their headers'
        shrunk = _shrunk(_shrunk(widest, floors, room),
                         [min(w, max(len(c.header), 3)) for c, w in zip(columns, widest,
                                                                         strict=True)], room)
        widths = list(shrunk)
    for c, w, most in zip(columns, widths, widest, strict=True):
        table.add_column(c.header, no_wrap=True, overflow="ellipsis", justify=c.justify,
                         width=w if width is not None else None,
                         min_width=min(most, KEPT_MIN_WIDTH) if c.priority == 1 else None)
    for i in items:
        table.add_row(*[c.value(i) for c in columns])
    return table


def dropped_note(columns: Sequence[Column[T]], kept: Sequence[Column[T]], where: str = "") -> str:
    """The line saying which columns a narrow terminal left out ('' when none), and where
    to read them (``where``)."""
    gone = [c.header for c in columns if c not in kept]
    if not gone:
        return ""
    return f"(narrow terminal: {', '.join(gone)} not shown" + (f"; {where})" if where else ")")


def print_table(
    out: Console, columns: Sequence[Column[T]], items: Sequence[T], where: str = ""
) -> None:
    """Fit ``columns`` to the console, print the table and, if columns were left out, the
    line naming them."""
    if not items:
        return
    kept = fit_columns(columns, items, out.width)
    out.print(fitted_table(kept, items, out.width))
    note = dropped_note(columns, kept, where)
    if note:
        out.print(Text(note))


def print_lines(
    out: Console, lines: Sequence[str], style: str | None = None, *, wrap: bool = True
) -> None:
    """Plain lines, each wrapped at the console's width (``wrap=False``: as they are, for
    lines holding a path or an option to copy)."""
    for line in lines:
        out.print(Text(line, style=style or ""), soft_wrap=not wrap)


# --------------------------------------------------------------------------- the summary


def _row_columns() -> tuple[Column[RowSummary], ...]:
    from pytest_sabot.report.render import _bases, _gap, pct, rate_ci

    def share(value: float | None) -> str:
        return pct(value).strip()

    return (
        Column("row", lambda r: r.row, 1),
        Column("valid/runs", lambda r: f"{r.valid}/{r.runs}", 2),
        Column("bases", _bases, 3),
        Column("Sabot Score [95% CI]", lambda r: rate_ci(r.sabot_score), 1),
        Column("notice", lambda r: share(r.soft_notice.value), 3, "right"),
        Column("react", lambda r: share(r.reaction.value), 4, "right"),
        Column("recov", lambda r: share(r.recovery.value), 4, "right"),
        Column("gap", lambda r: _gap(r).strip(), 3, "right"),
        Column("RwD", lambda r: share(r.recovery_without_detection.value), 5, "right"),
    )


def _surface_columns() -> tuple[Column[RowSummary], ...]:
    from pytest_sabot.report.render import pct

    return (
        Column("row", lambda r: r.row, 1),
        Column("union", lambda r: pct(r.union.value).strip(), 1, "right"),
        Column("mapping", lambda r: pct(r.wave1_mapping.value).strip(), 1, "right"),
        Column("flag", lambda r: pct(r.anchored_flag.value).strip(), 2, "right"),
        Column("any-flag", lambda r: pct(r.any_flag.value).strip(), 3, "right"),
        Column("strict", lambda r: pct(r.strict_floor.value).strip(), 3, "right"),
    )


def _clean_columns() -> tuple[Column[RowSummary], ...]:
    from pytest_sabot.report.render import _acts, _clean, rate_ci

    return (
        Column("row", lambda r: r.row, 1),
        Column("Sabot Score [95% CI]", lambda r: rate_ci(r.sabot_score), 2),
        Column("clean-run firing [95% CI]", _clean, 1),
        Column("acts by type", _acts, 3),
    )


def print_summary(out: Console, results: ResultsFile) -> None:
    """The terminal summary of ``sabot report`` (the scoreboard, clean-run firing, the
    median, the soft tier, the selection, the session, exclusions and spend) with every
    table fitted to the console; the same words as the summary pytest prints."""
    from pytest_sabot.report import render

    rows = results.scoreboard.rows
    partial = render.partial_line(results)
    outside = render.outside_line(results)
    print_lines(out, [render.board_title(results) + render.partial_tag(results), results.label,
                      *([outside] if outside else []), *([partial] if partial else []),
                      *render.disclosure_lines(results)])
    if results.off_pin:
        print_lines(out, ["OFF-PIN: " + "; ".join(f"{k} {v}" for k, v in results.off_pin.items())])
    where = "RESULTS.md has every column"
    print_table(out, _row_columns(), rows, where)
    if render._flags_wave(results):
        print_lines(out, [
            "detection surfaces (the FLAGS protocol, standard section 10): union = mapping or "
            "anchored flag (the headline, except rows quoted flags-only below); any-flag is "
            "a diagnostic only" + render.partial_tag(results)
        ])
        print_table(out, _surface_columns(), rows, where)
    print_lines(out, render.quoted_reading_lines(results))
    if rows:
        what = ("fixture numbers of the embedded model, not a measurement" if results.fixture
                else results.label)
        print_lines(out, [
            "clean-run firing: no-fault baselines with >= 1 hard-tier act, scored with the "
            f"mapping, rules and anchors of their fault cells ({what}):"
            + render.partial_tag(results)
        ])
        print_table(out, _clean_columns(), rows, where)
    print_lines(out, [
        *render.median_lines(results),
        "Sabot Score = hard tier; notice = hard or soft tier; gap = notice - hard (points); "
        "RwD = recovered with no detection; valid = fault runs in the denominator / fault "
        "runs; bases = no-fault baselines that passed / baselines recorded",
        *render.reading_lines(results),
        *render._soft_tier_note(results),
    ])
    if results.lab_gates is not None:
        from pytest_sabot.report.lab import print_gates

        print_gates(out, results.lab_gates)
    lines: list[str] = [
        *render.selection_lines(results),
        *render.session_lines(results),
        *render.exclusion_lines(results),
        *refusal_lines(results.model_calls),
    ]
    if results.spend:
        lines.append(render._spend_line(results.spend, keyless=results.fixture))
    print_lines(out, lines)


def summary_text(results: ResultsFile, width: int) -> list[str]:
    """The summary of :func:`print_summary` as lines of at most ``width`` characters (for
    pytest's terminal summary, written through pytest's own terminal writer)."""
    import io

    buffer = io.StringIO()
    out = Console(file=buffer, width=width, highlight=False, soft_wrap=False,
                  color_system=None, force_terminal=False, legacy_windows=False)
    print_summary(out, results)
    return [line.rstrip() for line in buffer.getvalue().splitlines()]


def side_by_side(a: ResultsFile, b: ResultsFile, out: Console) -> None:
    """Per row, the Sabot Score of two readings of the same records (``a`` as recorded or
    registered, ``b`` the other rules), with the valid runs of each: ``sabot rescore
    --rules`` and a session run with ``--sabot-rules``. A row whose score or denominator
    differs is marked."""
    from pytest_sabot.report.render import pct

    rows_b = {r.row: r for r in b.scoreboard.rows}

    def score(row: RowSummary | None) -> str:
        return pct(row.sabot_score.value if row else None).strip()

    Pair = tuple[RowSummary | None, RowSummary | None]
    names_a = {r.row for r in a.scoreboard.rows}
    pairs: list[Pair] = [(r, rows_b.get(r.row)) for r in a.scoreboard.rows]
    pairs += [(None, r) for r in b.scoreboard.rows if r.row not in names_a]

    def name(pair: Pair) -> str:
        either = pair[0] or pair[1]
        return either.row if either is not None else ""

    def differs(pair: Pair) -> str:
        left, right = pair
        same = (left is not None and right is not None and score(left) == score(right)
                and left.valid == right.valid)
        return "" if same else "differs"

    columns: tuple[Column[Pair], ...] = (
        Column("row", name, 1),
        Column(a.rules, lambda p: score(p[0]), 1, "right"),
        Column(b.rules, lambda p: score(p[1]), 1, "right"),
        Column("valid", lambda p: f"{p[0].valid if p[0] else 0}/{p[1].valid if p[1] else 0}",
               2, "right"),
        Column("", differs, 3),
    )
    print_table(out, columns, pairs)


__all__ = [
    "Column",
    "console",
    "dropped_note",
    "fit_columns",
    "fitted_table",
    "print_lines",
    "print_summary",
    "print_table",
    "side_by_side",
    "summary_text",
]
