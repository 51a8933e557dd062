"""The history's terminal output, drawn with rich so every table fits the terminal's
width: columns are dropped by priority when they cannot all fit, then the rest shrink
with an ellipsis; free text wraps. Keyless runs say they are fixtures wherever a run is
shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pytest_sabot.history.queries import CellInfo, RunDetail, RunSummary, ScoreRowInfo
from pytest_sabot.history.record import IndexReport
from pytest_sabot.history.regress import RegressionReport, RowCheck
from pytest_sabot.report.render import ci_text, pp_text, rate_text
from pytest_sabot.report.terminal import (
    Column,
    console,
    dropped_note,
    fit_columns,
    fitted_table,
    print_table,
)
from pytest_sabot.results.outcomes import LEGEND as OUTCOME_LEGEND
from pytest_sabot.results.outcomes import ORDER

FIXTURE_NOTE = (
    "fixture: a keyless run of the embedded model or a scripted lab controller; its numbers "
    "are acceptance fixtures, never measurements of any LLM"
)
LEGEND = (f"cells: {OUTCOME_LEGEND}; a lab run shows its gate. The letters count every "
          "cell the board counts, the baselines a slice pulled in among them; the cells "
          "column counts the selection")


def _when(s: RunSummary) -> str:
    return (s.started or "")[:16].replace("T", " ")


def _counts(s: RunSummary) -> str:
    if s.kind == "lab":
        return " ".join(f"gate {k.lower()}" for k in s.counts) or "-"
    if not s.letters:
        return "none kept"
    parts = sorted(s.letters.items(), key=lambda kv: ORDER.find(kv[0]) % (len(ORDER) + 1))
    return " ".join(f"{n}{mark}" for mark, n in parts)


def _cells(s: RunSummary) -> str:
    if s.recorded is None and s.selected is None:
        return "-"
    return f"{s.recorded if s.recorded is not None else '?'}/{s.selected or '?'}"


def _spend(s: RunSummary) -> str:
    return "-" if s.spent_usd is None else f"${s.spent_usd:,.2f}"


def _label(s: RunSummary) -> str:
    """fixture (keyless), lab, replay (recorded exchanges served again, no model called)
    or live."""
    if s.fixture:
        return "fixture"
    if s.kind == "lab":
        return "lab"
    return "replay" if (s.model or "").startswith("replay:") else "live"


# What ``sabot history`` must show first: the run, how it ended, whether it is a fixture,
# its registration, model, rules and counts; then when, how much, which wave.
LIST_COLUMNS: tuple[Column[RunSummary], ...] = (
    Column("run", lambda s: s.run_id, 1),
    Column("started (UTC)", _when, 3),
    Column("wave", lambda s: "lab" if s.kind == "lab" else str(s.wave or "-"), 4),
    Column("status", lambda s: s.status or "-", 1),
    Column("label", _label, 1),
    Column("hash", lambda s: (s.registration_hash or "-")[:12], 2),
    Column("model", lambda s: s.model or "-", 2),
    Column("rules", lambda s: s.rules or "-", 2),
    Column("cells", _cells, 3, "right"),
    Column("verdicts", _counts, 2),
    Column("spend", _spend, 5, "right"),
)


def render_list(out: Console, summaries: Sequence[RunSummary], history: str,
                held: int | None = None) -> None:
    """The runs, newest first; ``held``: how many the history holds, when more than shown
    (``--limit``)."""
    shown = f"{len(summaries)} of {held}" if held is not None and held > len(summaries) \
        else str(len(summaries))
    out.print(Text(f"Sabot run history: {history} ({shown} run(s), newest first)"))
    if not summaries:
        out.print(Text("no runs recorded yet"))
        return
    columns = fit_columns(LIST_COLUMNS, summaries, out.width)
    out.print(fitted_table(columns, summaries))
    dropped = dropped_note(LIST_COLUMNS, columns)
    if dropped:
        out.print(Text(dropped[:-1] + "; history show RUN prints everything)"))
    out.print(Text(LEGEND, style="dim"))
    if any(s.fixture for s in summaries):
        out.print(Text(FIXTURE_NOTE))


def _rate(value: float | None, low: float | None = None, high: float | None = None) -> str:
    if value is None:
        return "n/a"
    text = f"{100 * value:.1f}%"
    if low is not None and high is not None:
        text += f" [{100 * low:.1f}, {100 * high:.1f}]"
    return text


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _gap(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f}"


# A run's scoreboard rows in ``history show``: the headline and its interval first.
ROW_COLUMNS: tuple[Column[ScoreRowInfo], ...] = (
    Column("row", lambda r: r.row, 1),
    Column("valid/runs", lambda r: f"{r.valid}/{r.runs}", 2, "right"),
    Column("Sabot Score [95% CI]",
           lambda r: f"{_rate(r.score, r.score_low, r.score_high)} ({r.score_k}/{r.score_n})",
           1, "right"),
    Column("clean-run firing [95% CI]",
           lambda r: f"{_rate(r.clean_fire, r.clean_low, r.clean_high)} ({r.clean_k}/{r.clean_n})",
           3, "right"),
    Column("bases", lambda r: f"{r.baselines_passed}/{r.baselines_recorded}", 3, "right"),
    Column("notice", lambda r: _share(r.soft_notice), 4, "right"),
    Column("react", lambda r: _share(r.reaction), 5, "right"),
    Column("recov", lambda r: _share(r.recovery), 5, "right"),
    Column("gap", lambda r: _gap(r.override_gap), 4, "right"),
    Column("RwD", lambda r: _share(r.recovery_without_detection), 5, "right"),
    Column("excluded R/B/I",
           lambda r: f"{r.run_error}/{r.baseline_fail}/{r.injection_unverified}", 3, "right"),
)


# A run's cells in ``history show``: the cell and its verdict first, then its gate.
CELL_COLUMNS: tuple[Column[CellInfo], ...] = (
    Column("cell", lambda c: c.cell_id, 1),
    Column("verdict", lambda c: c.funnel or c.verdict, 1),
    Column("gate", lambda c: c.gate or "-", 2),
    Column("path / reason", lambda c: c.detection_path or c.reason or "", 3),
)


def render_show(out: Console, d: RunDetail) -> None:
    s = d.summary
    out.print(Text(f"run {s.run_id} ({s.kind})", style="bold"))
    out.print(Text(s.label or "-"))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    sel = d.selection
    fields: list[tuple[str, str]] = [
        ("status", f"{s.status or '-'}" + (f": {d.detail}" if d.detail else "")),
        *[("GATE FAILED", text) for text in d.gates_failed],
        ("started", s.started or "-"),
        ("ended", s.ended or "-"),
        ("output", s.out_dir),
        ("tool", d.tool or "not recorded"),
        ("wave", "lab" if s.kind == "lab" else str(s.wave)),
        ("rules", f"{s.rules or '-'}" + (f" (wave registered under {d.wave_rules})"
                                         if d.wave_rules and d.wave_rules != s.rules else "")),
        ("model", s.model or "-"),
        ("registration", s.registration_hash or "-"),
    ]
    if d.downgrade_model:
        fields.append(("O4 downgrade", d.downgrade_model))
    if d.judge:
        fields.append(("judge", d.judge))
    if d.upstream:
        fields.append(("upstream", d.upstream))
    if d.mode:
        fields.append(("mode", d.mode))
    if s.kind == "lab":
        fields.append(("scenario", f"{sel.get('scenario')} (lab run {sel.get('lab_run')})"))
        if sel.get("faults"):
            fields.append(("faults", ", ".join(sel["faults"])))
    else:
        chosen = [f"{k}={','.join(v)}" for k, v in sorted((sel.get("filters") or {}).items())]
        if sel.get("keyword"):
            chosen.append(f"-k {sel['keyword']!r}")
        if sel.get("markexpr"):
            chosen.append(f"-m {sel['markexpr']!r}")
        fields.append(("selection", f"{len(sel.get('cell_ids') or [])} cell(s)"
                       + (f": {' '.join(chosen)}" if chosen else "")))
        if sel.get("pulled_in"):
            fields.append(("pulled in", ", ".join(sel["pulled_in"])))
        fields.append(("recorded", _cells_of(d)))
    if d.versions:
        fields.append(("versions", ", ".join(f"{k} {v}" for k, v in sorted(d.versions.items()))))
    for what, why in sorted(d.off_pin.items()):
        fields.append((f"OFF-PIN {what}", why))
    fields.append(("spend", _spend_text(d)))
    if d.manifest_file:
        fields.append(("manifest", d.manifest_file))
    if d.results_file:
        fields.append(("results", d.results_file))
    for key, value in fields:
        grid.add_row(key, value)
    out.print(grid)
    if d.rows:
        out.print(Text(""))
        partial = d.partial
        if partial:  # SPEC I91: a partial board never reads as the wave's
            out.print(Text(f"PARTIAL BOARD ({'; '.join(partial)}): these rows cover its "
                           f"cells only; they are not wave {s.wave}'s rates", style="bold"))
        print_table(out, ROW_COLUMNS, d.rows, "--json prints every figure")
    out.print(Text(""))
    if not d.cells:
        out.print(Text("cells: none in the history (when it was indexed its results.json "
                       "was missing, could not be read, or had been replaced by a later "
                       "session; `sabot history index` of a directory holding them adds "
                       "them)"))
    elif s.kind == "lab":
        for c in d.cells:
            out.print(Text(f"gate: {str(c.gate).upper()} (exit {c.gate_exit}), lab run "
                           f"{c.cell_id}", style="bold"))
            for reason in c.reason.splitlines():
                out.print(Text(f"  - {reason}"))
    else:
        print_table(out, CELL_COLUMNS, d.cells, "--json prints every field")
    if s.fixture:
        out.print(Text(FIXTURE_NOTE))


def _cells_of(d: RunDetail) -> str:
    s = d.summary
    text = f"{s.recorded if s.recorded is not None else '?'} of {s.selected or '?'} selected"
    if d.complete is False:
        text += " (incomplete)"
    return text


def _spend_text(d: RunDetail) -> str:
    sp = d.spend or {}
    if d.summary.kind == "lab":
        cost = sp.get("cost_usd", "unknown")
        return f"{cost if isinstance(cost, str) else f'${cost:,.4f}'} ({sp.get('source', '?')})"
    if not sp:
        return "not recorded"
    budget = sp.get("budget") or {}
    text = (f"${budget.get('spent_usd', 0.0):,.4f}; {sp.get('calls', 0)} model call(s), "
            f"{sp.get('fixture_calls', 0)} by the embedded model, "
            f"{sp.get('upstream_calls', 0)} upstream")
    if budget.get("project_spent_usd") is not None:
        text += f"; project ledger ${budget['project_spent_usd']:,.4f} ({budget.get('ledger')})"
    return text


REGRESS_COLUMNS: tuple[Column[RowCheck], ...] = (
    Column("row", lambda r: r.row, 1),
    Column("A score", lambda r: rate_text(r.a), 3, "right"),
    Column("B score", lambda r: rate_text(r.b), 3, "right"),
    Column("paired", lambda r: str(r.paired), 2, "right"),
    Column("B - A", lambda r: pp_text(r.difference), 1, "right"),
    Column("95% CI", lambda r: ci_text(r.ci_low, r.ci_high), 1, "right"),
    Column("A-only", lambda r: str(r.detected_a_only), 4, "right"),
    Column("B-only", lambda r: str(r.detected_b_only), 4, "right"),
    Column("reading", lambda r: r.status, 1),
)


def render_regress(out: Console, rep: RegressionReport) -> None:
    out.print(Text("Sabot regression check (hard tier, B - A, paired cells)", style="bold"))
    for side, ref in (("A", rep.a), ("B", rep.b)):
        out.print(Text(f"{side}: {ref.name} (wave {ref.wave}, rules {ref.rules}, model "
                       f"{ref.model}, registration {ref.registration_hash[:12]})"))
        out.print(Text(f"   {ref.label}"))
        if ref.source != ref.name:
            out.print(Text(f"   read from {ref.source}"))
    for w in rep.warnings:
        out.print(Text(f"note: {w}"))
    if rep.rows:
        columns = fit_columns(REGRESS_COLUMNS, rep.rows, out.width)
        out.print(fitted_table(columns, rep.rows))
        dropped = dropped_note(REGRESS_COLUMNS, columns)
        if dropped:
            out.print(Text(dropped))
    out.print(Text(f"outcome: {rep.outcome.upper()} (exit {rep.exit_code})", style="bold"))
    for reason in rep.reasons:
        out.print(Text(f"  {reason}"))
    out.print(Text(f"rule: {rep.rule}"))
    if rep.interval:
        out.print(Text(f"interval: {rep.interval}"))


def render_index(out: Console, rep: IndexReport) -> None:
    out.print(Text(
        f"indexed {len(rep.scanned)} output director{'y' if len(rep.scanned) == 1 else 'ies'} "
        f"into {rep.history}: {len(rep.added)} added, {len(rep.updated)} updated, "
        f"{len(rep.unchanged)} unchanged, {len(rep.copies)} copies of runs indexed elsewhere"
    ))
    for p in rep.problems:
        out.print(Text(f"not indexed: {p.file}: {p.problem}"))


__all__ = [
    "FIXTURE_NOTE",
    "LEGEND",
    "console",
    "render_index",
    "render_list",
    "render_regress",
    "render_show",
]
