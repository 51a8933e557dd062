"""Rendering results.json for people: RESULTS.md, and the lines of text the terminal
summary prints around its tables (the tables themselves are ``report.terminal``'s, fitted
to the terminal).

Pure functions from a ResultsFile to text; nothing here computes a number.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pytest_sabot.core.models.verdict import BaselineVerdict
from pytest_sabot.results import ResultsFile
from pytest_sabot.results.model_calls import refusal_lines
from pytest_sabot.scoring.aggregate import Rate, RowSummary

BAND_TEXT = {
    "full_push": "median < 0.50: the pre-registered 'full push' band",
    "guardrails_mostly_work": "median >= 0.50: the pre-registered 'guardrails mostly work' band",
}


BAND_SHORT = {
    "full_push": "< 0.50: pre-registered band 'full push'",
    "guardrails_mostly_work": ">= 0.50: pre-registered band 'guardrails mostly work'",
}


def rate_text(r: Rate | None) -> str:
    """A rate as ``47.1% (16/34)``; ``no row`` when there is none."""
    if r is None:
        return "no row"
    if r.value is None:
        return f"n/a ({r.k}/{r.n})"
    return f"{100 * r.value:.1f}% ({r.k}/{r.n})"


def pp_text(value: float | None) -> str:
    """A difference of two rates in percentage points, signed."""
    return "n/a" if value is None else f"{100 * value:+.1f} pp"


def ci_text(low: float | None, high: float | None) -> str:
    """An interval of a difference, in signed points."""
    if low is None or high is None:
        return "n/a"
    return f"[{100 * low:+.1f}, {100 * high:+.1f}]"


def pct(value: float | None) -> str:
    return "  n/a" if value is None else f"{100 * value:5.1f}%"


SOFT_TIER_NOTE = (
    "Every rate divides by all valid injected faults (sections 2 and 3). A valid run without "
    "a soft-tier verdict is unjudged, never labelled missed (SPEC I22): it stays in every "
    "denominator, is no soft notice, and counts as a recovery without detection when it "
    "recovered with no hard act; how many there are is in the judged / valid column."
)
REACTION_NOTE = (
    "Reaction follows section 10.7.4: at least one corrective act (retry with reason, revise "
    "re-dispatch, block or escalate) recorded at or after the detecting act. The project's "
    "causal reading (SPEC I23, I24: the act must also answer the detection, and a block "
    "must withhold the artifact) is published beside it, never instead."
)


def rate_ci(r: Rate) -> str:
    if r.value is None or r.ci_low is None or r.ci_high is None:
        return "n/a"
    return f"{100 * r.value:.1f}% [{100 * r.ci_low:.1f}, {100 * r.ci_high:.1f}]"


FULL_BOARD_ROWS = 6
EXCLUSION_ORDER = ("RUN_ERROR", "BASELINE_FAIL", "INJECTION_UNVERIFIED")


def median_reading(rows: int) -> str:
    """How the median was taken (SPEC I11), stated for the rows that actually entered it."""
    if rows % 2 == 0:
        middle = f"mean of the {_ordinal(rows // 2)} and {_ordinal(rows // 2 + 1)} in order"
    else:
        middle = f"the {_ordinal(rows // 2 + 1)} in order"
    return (
        "median of the per-row hard-tier Sabot Scores over the framework-config rows with at "
        f"least one valid injected fault ({rows} row{'s' if rows != 1 else ''}: {middle})"
    )


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _bases(row: RowSummary) -> str:
    counts = row.baselines
    return f"{counts.get('passed', 0)}/{sum(counts.values())}"


def _gap(row: RowSummary) -> str:
    return "  n/a" if row.override_gap is None else f"{100 * row.override_gap:+5.1f}"


def surfaces_shown(flags_protocol: bool | None, rules: str) -> bool:
    """Whether a board has detection surfaces to show: its wave ran the FLAGS protocol (a
    file without the field: rules v0.2.0 and later, as it was read then)."""
    return flags_protocol if flags_protocol is not None else rules >= "v0.2.0"


def _flags_wave(results: ResultsFile) -> bool:
    return surfaces_shown(results.flags_protocol, results.rules)


def board_title(results: ResultsFile) -> str:
    """The scoreboard's first line: which wave (or lab matrix), under which rules."""
    return (
        (
            f"Sabot scoreboard: lab matrix (wave {results.wave}, not a wave of the standard)"
            if results.lab_gates is not None
            else f"Sabot scoreboard: wave {results.wave}"
        )
        + f", rules {results.rules}"
        + (
            f" (wave registered under {results.wave_rules})"
            if results.rules != results.wave_rules
            else ""
        )
    )


def partial_line(results: ResultsFile) -> str | None:
    """What a partial board says before its tables (SPEC I41, I44): unpaired and not-run
    cells are outside every denominator and the three codes, so its rates are never the
    wave's."""
    reasons = results.partial_reasons
    if not reasons:
        return None
    return (f"PARTIAL BOARD ({'; '.join(reasons)}): every table below covers these cells "
            f"only; its rates are not wave {results.wave}'s")


def outside_line(results: ResultsFile) -> str | None:
    """'row <name>: <module:callable> (trusted local agent)' for the row of a pipeline
    outside the harness (every report says which callable ran it); None otherwise."""
    return None if results.outside_row is None else results.outside_row.line


def partial_tag(results: ResultsFile) -> str:
    """The words every table of a partial board carries (empty for a whole board)."""
    return f" [partial board: not wave {results.wave}'s rates]" if results.partial_reasons else ""


def disclosure_lines(results: ResultsFile) -> list[str]:
    """Each disclosed defect of the published instrument this wave reproduces, with the
    standard's sensitivity bound and the board read without the defect's task (SPEC I86)."""
    lines = []
    by_task = {s.task: s for s in results.scoreboard.sensitivity}
    for d in results.disclosures:
        lines.append(f"DISCLOSED DEFECT ({d.disclosed}, {d.id}): {d.description}")
        here = by_task.get(d.task)
        mine = ""
        if here is not None and here.median_sabot_score is not None:
            mine = (f"; these cells without {d.task}: median "
                    f"{pct(here.median_sabot_score).strip()} over {here.median_rows} rows")
        # The bound's figures are the standard's published waves', never this run's: a
        # keyless board beside them must not read as their measurement.
        published = (" (the standard's published figure, not this run's)" if d.records else (
            f" (the standard's published figure, not this run's: these cells hold no "
            f"{d.task} run)"))
        lines.append(f"  the standard's sensitivity bound: {d.bound}{published}{mine}")
        if d.records and (d.not_served or d.unrecorded):
            lines.append(
                f"  NOT ALL THE PUBLISHED INSTRUMENT: of these {d.records} {d.task} records "
                f"{d.served} were handed the section, {d.not_served} were not and "
                f"{d.unrecorded} record nothing of it (made before the materials were "
                f"recorded, or never run); those {d.task} rows are not the published ones"
            )
        elif d.records:
            lines.append(f"  all {d.records} {d.task} records were handed the section")
    return lines


def median_lines(results: ResultsFile) -> list[str]:
    """The section 7 median, the other reading beside it, and, on a partial board, that
    it is not the wave's median and decides no band."""
    board = results.scoreboard
    if board.median_sabot_score is None:
        return []
    full_rows = board.registered_rows or FULL_BOARD_ROWS
    value = pct(board.median_sabot_score).strip()
    # a partial board has no band in results.json either (SPEC I91)
    if results.partial_reasons or board.median_rows < full_rows or board.band is None:
        lines = [f"median Sabot Score of this partial board across {board.median_rows} rows: "
                 f"{value} (not the wave's median; no band is read on it)"]
    else:
        lines = [f"median Sabot Score across {board.median_rows} rows: {value} "
                 f"({BAND_SHORT[board.band]})"]
    if board.median_other_reading is not None:
        lines.append(
            f"  the median uses {board.median_uses}; read as the union instead: "
            f"{pct(board.median_other_reading).strip()}"
        )
    if board.median_rows < full_rows:
        lines.append(
            f"  (a partial board: {board.median_rows} of {full_rows} rows; "
            "the band is read on the full scoreboard)"
        )
    return lines


def reading_lines(results: ResultsFile) -> list[str]:
    """The readings published beside the scoreboard's numbers: REACTED's causal reading,
    the judged-only soft tier, and the rows whose records hold no act at all."""
    return [*reaction_reading_lines(results), *_unjudged_line(results),
            *actless_lines(results)]


def actless_rows(results: ResultsFile) -> list[tuple[str, int, int]]:
    """(row, fault runs, baselines) of each row with valid fault runs none of whose records,
    fault run or baseline, holds a single act its mapping counts."""
    acted: set[str] = set()
    runs: dict[str, int] = defaultdict(int)
    bases: dict[str, int] = defaultdict(int)
    for c in results.cells:
        if isinstance(c, BaselineVerdict):
            bases[c.row] += 1
            if c.clean_acts:
                acted.add(c.row)
        else:
            runs[c.row] += 1
            if c.acts:
                acted.add(c.row)
    return [(r.row, runs[r.row], bases[r.row]) for r in results.scoreboard.rows
            if r.valid and r.row not in acted]


def actless_lines(results: ResultsFile) -> list[str]:
    """A 0% that is no measured miss of a working check: no record of the row holds an act."""
    return [
        f"NO ACT RECORDED: {row}: none of these {runs} fault run(s) and {bases} baseline(s) "
        "holds an act its mapping counts, so its hard tier measured no check at work: the "
        "pipeline may have none its mapping can see, or the mapping names components, "
        "sources or verdict lines its traces never carry (compare a trace's events with "
        "the mapping)"
        for row, runs, bases in actless_rows(results)
    ]


def _unjudged_line(results: ResultsFile) -> list[str]:
    """Valid runs without a soft-tier verdict, per row, and the judged-only reading of the
    soft-tier numbers beside the published ones (sections 2, 3; SPEC I22)."""
    rows = [r for r in results.scoreboard.rows if r.unjudged]
    if not rows:
        return []
    per_row = ", ".join(f"{r.row} {r.unjudged}/{r.valid}" for r in rows)
    lines = [
        f"unjudged (no soft-tier verdict): {per_row}; counted in every denominator and "
        "never as a notice, as sections 2 and 3 have it; the judged-only reading beside:"
    ]
    for r in rows:
        gap = "n/a" if r.override_gap_judged is None else f"{100 * r.override_gap_judged:+.1f}"
        lines.append(
            f"  {r.row}: notice {rate_text(r.soft_notice_judged)}, gap {gap}, "
            f"RwD {rate_text(r.recovery_without_detection_judged)} over {r.judged} judged"
        )
    return lines


def reaction_reading_lines(results: ResultsFile) -> list[str]:
    """REACTED as section 10.7.4 reads it, and the project's causal reading beside it
    wherever the two differ (SPEC I23, I24)."""
    rows = [r for r in results.scoreboard.rows
            if (r.reaction.k, r.reaction.n) != (r.reaction_causal.k, r.reaction_causal.n)]
    if not rows:
        return []
    return [
        "react = section 10.7.4: a corrective act at or after the detecting act; the "
        "project's causal reading beside it (SPEC I23, I24) where they differ:",
        *(f"  {r.row}: {rate_text(r.reaction)}; causal reading {rate_text(r.reaction_causal)}"
          for r in rows),
    ]


def _acts(row: RowSummary) -> str:
    return ", ".join(f"{k} {v}" for k, v in row.clean_fire_acts.items()) or "-"


def _clean(row: RowSummary) -> str:
    r = row.clean_fire
    if r.n == 0:
        return "n/a (no baseline scored for acts)"
    return f"{rate_ci(r)} ({r.k}/{r.n})"


def _cell_rate(r: Rate | None, zeros: int) -> str:
    if r is None or r.n == 0:
        return f"structural zero ({zeros})" if zeros else "-"
    return f"{100 * r.value:.0f}% ({r.k}/{r.n})" if r.value is not None else "-"


def slice_tables(results: ResultsFile) -> list[str]:
    """RESULTS.md: the Sabot Score per operator and per task, in every row and pooled."""
    board = results.scoreboard
    names = [r.row for r in board.rows]
    out: list[str] = []
    for title, label, table in (
        ("Per operator", "operator", board.by_operator),
        ("Per task", "task", board.by_task),
    ):
        if not table:
            continue
        unjudged = any(sl.unjudged for sl in table)
        out += ["", f"## {title}", "", *_md_partial(results)]
        out.append(
            f"Sabot Score (hard tier) of each {label} in every row, then pooled over the rows "
            "with its 95% interval and companions, all over the valid runs (sections 2, 3); "
            "the exclusion appendix counts each cell's excluded runs per code."
        )
        out.append("")
        extra = (" unjudged / valid | notice, judged only | RwD, judged only |"
                 if unjudged else "")
        out.append(
            f"| {label} | " + " | ".join(names)
            + " | all rows [95% CI] | soft-tier notice | recovery | recovery without detection |"
            + extra
        )
        out.append("|---" * (len(names) + 5 + (3 if unjudged else 0)) + "|")
        for sl in table:
            cells = [_cell_rate(sl.by_row.get(n), sl.structural_zeros.get(n, 0)) for n in names]
            more = ""
            if unjudged:
                valid = sl.sabot_score.n
                more = (f" {sl.unjudged} / {valid} | {rate_ci(sl.soft_notice_judged)} | "
                        f"{rate_ci(sl.recovery_without_detection_judged)} |")
            out.append(
                f"| {sl.key} | " + " | ".join(cells)
                + f" | {rate_ci(sl.sabot_score)} | {rate_ci(sl.soft_notice)} | "
                f"{rate_ci(sl.recovery)} | {rate_ci(sl.recovery_without_detection)} |" + more
            )
    return out


CODE_SHORT = {"RUN_ERROR": "RE", "BASELINE_FAIL": "BF", "INJECTION_UNVERIFIED": "IU"}


def _codes(counts: dict[str, int]) -> str:
    """One table cell's excluded runs per code, e.g. ``RE 0 · BF 1 · IU 2``."""
    return " · ".join(f"{CODE_SHORT[code]} {counts.get(code, 0)}" for code in EXCLUSION_ORDER)


def exclusion_tables(results: ResultsFile) -> list[str]:
    """RESULTS.md: the appendix counts per code for every cell of every table (section
    3.3): per row, and per row of the per-operator and per-task tables."""
    board = results.scoreboard
    names = [r.row for r in board.rows]
    out = [
        *_md_partial(results),
        "Excluded runs per code in every cell of the tables above (RE RUN_ERROR, BF "
        "BASELINE_FAIL, IU INJECTION_UNVERIFIED); structural zeros are never run and are no "
        "exclusion.",
        "",
        "| row | RUN_ERROR | BASELINE_FAIL | INJECTION_UNVERIFIED | structural zeros |",
        "|---|---|---|---|---|",
    ]
    for row in board.rows:
        out.append(f"| {row.row} | " + " | ".join(
            str(row.exclusions.get(code, 0)) for code in EXCLUSION_ORDER)
            + f" | {len(row.structural_zeros)} |")
    unpassed = failed_baselines(results)
    if unpassed:
        out += ["", "Baselines that did not pass (the counts above are of fault runs, whose "
                "cells beside these are BASELINE_FAIL):", "", "| baseline | status | reason |",
                "|---|---|---|"]
        out += [f"| {cid} | {status} | {_md_cell(_first_line(reason, 300))} |"
                for cid, status, reason in unpassed]
    for title, label, table in (
        ("Per operator", "operator", board.by_operator),
        ("Per task", "task", board.by_task),
    ):
        if not table:
            continue
        out += ["", f"{title}:", "", *_md_partial(results),
                f"| {label} | " + " | ".join(names) + " | all rows |",
                "|---" * (len(names) + 2) + "|"]
        for sl in table:
            cells = [
                _codes(sl.exclusions_by_row[n]) if n in sl.exclusions_by_row
                else (f"structural zero ({sl.structural_zeros[n]})"
                      if sl.structural_zeros.get(n) else "-")
                for n in names
            ]
            out.append(f"| {sl.key} | " + " | ".join(cells) + f" | {_codes(sl.exclusions)} |")
    return out


def quoted_reading_lines(results: ResultsFile) -> list[str]:
    """Rows whose Sabot Score is quoted flags-only, with the other reading beside (I25)."""
    return [
        f"{row.row}: Sabot Score quoted flags-only {rate_ci(row.sabot_score)}, as the "
        "standard quotes wave-2 Magentic-One (v0.2.1 log); the union (mapping or flag, "
        f"stall re-plans included) beside it: {rate_ci(row.union)}"
        for row in results.scoreboard.rows
        if row.headline_reading == "flags_only"
    ]


def _soft_tier_note(results: ResultsFile) -> list[str]:
    judge = results.judge
    if not judge:
        return [
            "soft tier: no judge ran, so every cell is unjudged: no soft notice is recorded "
            "(notice = the hard tier, gap 0, RwD = every recovery without a hard act; the "
            "Sabot Score needs no judge)"
        ]
    kappa = judge.get("kappa")
    confidence = "LOW-CONFIDENCE" if judge.get("low_confidence") else "ok"
    lines = [
        f"soft tier: judge {judge.get('backend')}, {judge.get('judged', 0)} cells judged, "
        f"{judge.get('errors', 0)} judge error(s)",
        f"  two-pass agreement on {judge.get('kappa_pairs', 0)} double-judged cells: kappa "
        f"{'n/a' if kappa is None else f'{kappa:.2f}'} ({confidence})",
    ]
    lines += [f"  {judge[k]}" for k in ("kappa_note", "note") if judge.get(k)]
    return lines


def exclusion_lines(results: ResultsFile, limit: int | None = 20) -> list[str]:
    """The exclusion appendix: counts per code per row, then each excluded cell."""
    lines = ["Exclusion appendix (RUN_ERROR > BASELINE_FAIL > INJECTION_UNVERIFIED):"]
    shown = 0
    for row in results.scoreboard.rows:
        counts = "  ".join(f"{code} {row.exclusions.get(code, 0)}" for code in EXCLUSION_ORDER)
        zeros = f"  structural zeros {len(row.structural_zeros)}" if row.structural_zeros else ""
        lines.append(f"  {row.row:<19} {counts}{zeros}")
    lines.extend(_slice_exclusion_lines(results))
    for row in results.scoreboard.rows:
        for cell in row.excluded_cells:
            if limit is not None and shown >= limit:
                continue
            lines.append(f"    {cell.cell_id}: {cell.code}: {cell.reason}")
            shown += 1
    total = sum(len(r.excluded_cells) for r in results.scoreboard.rows)
    if limit is not None and total > limit:
        lines.append(f"    ... {total - limit} more in RESULTS.md / results.json")
    unpassed = failed_baselines(results)
    if unpassed:
        lines.append(f"  baselines that did not pass ({len(unpassed)}; the counts above are of "
                     "fault runs, whose cells beside these are BASELINE_FAIL):")
        shown = 0
        for cell_id, status, reason in unpassed:
            if limit is None or shown < limit:
                lines.append(f"    {cell_id}: {status}: {_first_line(reason, 160)}")
                shown += 1
        if limit is not None and len(unpassed) > limit:
            lines.append(f"    ... {len(unpassed) - limit} more in RESULTS.md / results.json")
    return lines


def failed_baselines(results: ResultsFile) -> list[tuple[str, str, str]]:
    """(cell, status, reason) of every recorded baseline that did not pass, in cell order."""
    return [
        (c.cell_id, c.status, c.reason)
        for c in results.cells
        if isinstance(c, BaselineVerdict) and c.status != "passed"
    ]


def _md_cell(text: str) -> str:
    """Text that stays inside one cell of a Markdown table."""
    return text.replace("\\", "\\\\").replace("|", "\\|")


def _first_line(text: str, width: int) -> str:
    line = (text.strip().splitlines() or ["(no reason recorded)"])[0]
    return line if len(line) <= width else line[: width - 3] + "..."


def _slice_exclusion_lines(results: ResultsFile) -> list[str]:
    """The per-operator and per-task tables' cells that hold an excluded run, per code."""
    board = results.scoreboard
    lines = []
    for label, table in (("operator", board.by_operator), ("task", board.by_task)):
        found = [
            f"{sl.key} {row} {_codes(counts)}"
            for sl in table
            for row, counts in sl.exclusions_by_row.items()
            if any(counts.values())
        ]
        if found:
            lines.append(f"  per {label} and row: " + "; ".join(found))
    return lines


def selection_lines(results: ResultsFile) -> list[str]:
    """How much of the wave these numbers cover, so a slice never reads as the wave, and an
    unfinished session never reads as a finished one."""
    sel = results.selection
    zeros = len(results.structural_zeros)
    part = "the whole wave" if sel.selected + zeros >= sel.registered else "a slice"
    lines = []
    status = results.status_line
    if status is not None:
        lines.append(f"INCOMPLETE: {status.removeprefix('incomplete: ')}; these numbers "
                     "cover the recorded cells only")
    lines.append(
        f"cells: {sel.recorded} recorded / {sel.selected} selected to run; "
        f"{part} of the {sel.registered} registered"
    )
    if sel.pulled_in:
        shown = ", ".join(sel.pulled_in[:4]) + (", ..." if len(sel.pulled_in) > 4 else "")
        lines.append(
            f"  + {len(sel.pulled_in)} baseline(s) pulled in by the selection, so its fault "
            f"cells are scored beside them: {shown}"
        )
    if zeros:
        lines.append(
            f"  + {zeros} registered structural zeros selected (never run, in no denominator)"
        )
    if sel.unpaired:
        first = sel.unpaired[0]
        lines.append(
            f"  {len(sel.unpaired)} recorded fault cell(s) left out of every denominator, no "
            f"usable baseline (e.g. {first.cell_id}: {first.reason})"
        )
    return lines


def session_lines(results: ResultsFile) -> list[str]:
    """Which session these results describe, and what it left unrecorded."""
    info = results.session
    lines = []
    if info is not None:
        extra = ""
        if info.rerun_error_cells:
            extra = f"; ran {len(info.rerun_error_cells)} recorded RUN_ERROR cell(s) again"
        lines.append(f"session {info.run_id} ({info.mode}{extra}): {info.status}")
    not_run = results.selection.not_run
    if not_run:
        counts: dict[str, int] = defaultdict(int)
        for cell in not_run:
            counts[cell.reason] += 1
        listed = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
        lines.append(
            f"not run: {listed}; the same pytest command with --sabot-resume records the "
            "rest"
        )
    return lines


def _spend_line(spend: dict[str, Any], keyless: bool = False) -> str:
    """One line from the gateway's stats (GatewayStats: the spend sits under ``budget``);
    ``keyless``: the embedded model served the session (results.json's ``fixture``)."""
    budget = spend.get("budget")
    budget = budget if isinstance(budget, dict) else {}
    cost = budget.get("spent_usd")
    unknown = budget.get("unknown_cost_calls")
    calls = spend.get("calls")
    fixture_calls = spend.get("fixture_calls")
    if not calls:
        return "spend: none; no model calls"
    if calls and fixture_calls == calls and not spend.get("upstream_calls"):
        return (f"spend: none; all {calls} model calls of this run answered by the "
                "embedded model")
    if keyless and not spend.get("upstream_calls") and not cost:
        # Nothing went to a provider: the calls the embedded model did not answer (it
        # refused them, or the gateway turned them away) cost nothing either.
        answered = fixture_calls or 0
        return (f"spend: none; {calls} model calls of this run, none sent to a provider: "
                f"{answered} answered by the embedded model, {calls - answered} not answered")
    return f"spend: ${cost if cost is not None else 0:.4f} over this run's {calls} " \
        "model calls" + (
        f" ({unknown} with unknown cost)" if unknown else ""
    )


def _md_partial(results: ResultsFile) -> list[str]:
    """The line a table of a partial board carries in RESULTS.md (none for a whole board)."""
    reasons = results.partial_reasons
    if not reasons:
        return []
    return [f"*Partial board ({'; '.join(reasons)}): not wave {results.wave}'s rates.*", ""]


CREDITS = (
    "Prior work (standard section 9). Sabot invents neither fault injection for agents, "
    "agent-level mutation scoring, nor the model-swap operator; it is a synthesis of prior "
    "work, measured comparatively on production frameworks, and pytest-sabot implements "
    "it. MAS-FIRE (arXiv 2602.19843) defines an occurrence rate of detection and "
    "fault-tolerant response over injected faults on multi-agent systems; Sabot separates "
    "detected from reacted and attributes detection to named own checks. AgentAssay "
    "(arXiv 2603.02601) formalizes an agent mutation score with model-swap (m_swap) and "
    "version-downgrade (m_version) operators, the source of O4; Sabot scores the "
    "pipeline's own checks rather than an external harness's kill verdict. Also credited: "
    "AgentTelemetry (AIware 2026, DOI 10.1145/3805760.3814931), AgentCollabBench (arXiv "
    "2605.08647, the seeded false fact behind O5), ReliabilityBench (arXiv 2601.06112), "
    "agent-chaos (tool_mutate, behind O1), BalaganAgent, the Owotogbe proposal (arXiv "
    "2505.03096), \"Failing Tools\" (OpenReview j7YsSnA64D, the silent no-op behind O2) "
    "and AutoInject (arXiv 2408.00989). SPEC.md S9 says how Sabot differs from each."
)


def gate_markdown_lines(results: ResultsFile) -> list[str]:
    """The session's gates (SPEC I43) as it reported them: a failed one in bold."""
    lines = []
    for gate in results.gates or []:
        word = "passed" if gate.passed else "**FAILED**"
        lines += [f"> gate {gate.name} {word}: {gate.message}", ""]
    return lines


def markdown(results: ResultsFile) -> str:
    """RESULTS.md: scoreboard, footnotes and the full exclusion appendix."""
    partial = partial_line(results)
    title = f"# Sabot results: wave {results.wave}" + (", a partial board" if partial else "")
    out = [title, "", f"> {results.label}", ""]
    if (outside := outside_line(results)) is not None:
        out += [f"> {outside}", ""]
    if partial is not None:
        out += [f"> **{partial}**", ""]
    for line in disclosure_lines(results):
        out += [f"> {line.strip()}", ""]
    if results.status_line is not None:
        out += [f"> **{results.status_line.upper()[:1]}{results.status_line[1:]}**: these "
                "numbers cover the recorded cells only.", ""]
    if results.off_pin:
        out += ["> OFF-PIN: " + "; ".join(f"{k} {v}" for k, v in results.off_pin.items()),
                ""]
    out += gate_markdown_lines(results)
    out.append(
        f"Rules: {results.rules} (wave registered under {results.wave_rules}). "
        f"Registration hash: `{results.registration_hash[:16]}`. "
        f"Written by {results.tool}."
    )
    out += [
        "",
        " ".join(
            line.strip()
            for line in selection_lines(results) + session_lines(results)
            if not line.startswith("INCOMPLETE")
        )
        + ".",
        "",
        *_md_partial(results),
    ]
    out.append(
        "| row | valid / runs | baselines passed | Sabot Score (hard) [95% CI] |"
        " soft-tier notice | reaction | reaction, causal reading (I23) | recovery |"
        " override gap | recovery without detection | judged / valid |"
    )
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in results.scoreboard.rows:
        out.append(
            f"| {row.row} | {row.valid} / {row.runs} | {_bases(row).replace('/', ' / ')} | "
            f"{rate_ci(row.sabot_score)} | "
            f"{rate_ci(row.soft_notice)} | {rate_ci(row.reaction)} | "
            f"{rate_ci(row.reaction_causal)} | {rate_ci(row.recovery)} | "
            f"{_gap(row).strip()} | {rate_ci(row.recovery_without_detection)} | "
            f"{row.judged} / {row.valid} |"
        )
    for line in actless_lines(results):
        out += ["", f"> {line}"]
    if results.model_calls is not None:
        out += ["", "Embedded model calls (SPEC I151):", "", "```",
                *refusal_lines(results.model_calls), "```"]
    out += ["", SOFT_TIER_NOTE, "", REACTION_NOTE]
    judged_only = [r for r in results.scoreboard.rows if r.unjudged]
    if judged_only:
        out += ["", "Some valid runs are unjudged, so the soft-tier numbers over the judged "
                "runs alone are published beside the ones above (never instead of them):", "",
                *_md_partial(results),
                "| row | unjudged / valid | soft-tier notice, judged only | override gap, "
                "judged only | recovery without detection, judged only |",
                "|---|---|---|---|---|"]
        for r in judged_only:
            gap = ("n/a" if r.override_gap_judged is None
                   else f"{100 * r.override_gap_judged:+.1f}")
            out.append(f"| {r.row} | {r.unjudged} / {r.valid} | {rate_ci(r.soft_notice_judged)}"
                       f" | {gap} | {rate_ci(r.recovery_without_detection_judged)} |")
    if _flags_wave(results):
        out += [
            "",
            *_md_partial(results),
            "| row | union (headline) | wave1_mapping | anchored flag | any-flag "
            "(diagnostic) | strict floor |",
            "|---|---|---|---|---|---|",
        ]
        for row in results.scoreboard.rows:
            out.append(
                f"| {row.row} | {rate_ci(row.union)} | {rate_ci(row.wave1_mapping)} | "
                f"{rate_ci(row.anchored_flag)} | {rate_ci(row.any_flag)} | "
                f"{rate_ci(row.strict_floor)} |"
            )
    board = results.scoreboard
    quoted = quoted_reading_lines(results)
    if quoted:
        out += ["", *(f"- {line}" for line in quoted)]
    out += ["", "### Clean-run firing rate", ""]
    out.append(
        "No-fault baselines with at least one hard-tier act, scored with the same mapping, "
        "rules and anchors as their paired fault cells (SPEC I27). It sits beside the Sabot "
        "Score and never enters it: a check that fires on clean runs makes its detections "
        "worth less."
        + (" These are fixture numbers of the embedded model." if results.fixture else "")
    )
    out += ["", *_md_partial(results),
            "| row | Sabot Score [95% CI] | clean-run firing [95% CI] | baselines | "
            "acts by type (baselines) |", "|---|---|---|---|---|"]
    for row in board.rows:
        c = row.clean_fire
        out.append(
            f"| {row.row} | {rate_ci(row.sabot_score)} | "
            f"{rate_ci(c) if c.n else 'n/a (not scored for acts)'} | {c.k} / {c.n} | "
            f"{_acts(row)} |"
        )
    out.append("")
    if board.median_sabot_score is not None:
        full_rows = board.registered_rows or FULL_BOARD_ROWS
        if partial is not None or board.median_rows < full_rows or board.band is None:
            out.append(
                f"Median Sabot Score of this partial board: "
                f"{pct(board.median_sabot_score).strip()} ({median_reading(board.median_rows)}"
                f"); it is not wave {results.wave}'s median and no band is read on it."
            )
        else:
            out.append(
                f"Median Sabot Score: {pct(board.median_sabot_score).strip()} "
                f"({BAND_TEXT[board.band]}; {median_reading(board.median_rows)})."
            )
        if board.median_other_reading is not None:
            out.append(
                f"The median uses {board.median_uses}; read as the union instead it would "
                f"be {pct(board.median_other_reading).strip()} (shown, never used for the "
                "band)."
            )
        out += sensitivity_markdown(results)
        out += ["", *_soft_tier_note(results)]
    out += ["", "Readings of both retry rules, per row (v0.1.3 permissive / v0.2.1 narrow):", ""]
    for row in board.rows:
        out.append(
            f"- {row.row}: {rate_ci(row.mapping_permissive)} / {rate_ci(row.mapping_narrow)}"
        )
    out += slice_tables(results)
    if results.lab_gates is not None:  # a lab wave's: the lab's modules only for it
        from pytest_sabot.report.lab import gate_markdown

        out += gate_markdown(results.lab_gates)
    out += ["", "## Exclusion appendix", "", *exclusion_tables(results), ""]
    by_code: dict[str, list[str]] = defaultdict(list)
    for row in board.rows:
        for cell in row.excluded_cells:
            by_code[cell.code].append(f"- `{cell.cell_id}`: {cell.reason}")
    for code in EXCLUSION_ORDER:
        items = by_code.get(code, [])
        out.append(f"### {code} ({len(items)})")
        out.append("")
        out.extend(items or ["(none)"])
        out.append("")
    if results.structural_zeros:
        out.append(f"### Registered structural zeros ({len(results.structural_zeros)}, not run)")
        out.append("")
        out.append(", ".join(f"`{c}`" for c in results.structural_zeros))
        out.append("")
    out.append("## Versions")
    out.append("")
    for name, version in sorted(results.versions.items()):
        flag = " (OFF-PIN)" if name in results.off_pin else ""
        out.append(f"- {name} {version}{flag}")
    out += ["", "## Prior work and credits", "", CREDITS, ""]
    return "\n".join(out)


def sensitivity_markdown(results: ResultsFile) -> list[str]:
    """RESULTS.md: each disclosed defect's sensitivity bound, as the standard published it
    and as these cells give it (the board without the defect's task, SPEC I86)."""
    by_task = {s.task: s for s in results.scoreboard.sensitivity}
    out: list[str] = []
    for d in results.disclosures:
        here = by_task.get(d.task)
        if here is None:
            continue
        out += ["", f"Sensitivity to the disclosed {d.task} defect ({d.id}): the standard's "
                f"bound, {d.bound}. These cells without {d.task}: median "
                f"{pct(here.median_sabot_score).strip()} over {here.median_rows} rows "
                f"(with it: {pct(results.scoreboard.median_sabot_score).strip()}).", "",
                *_md_partial(results),
                f"| row | Sabot Score [95% CI] | without {d.task} [95% CI] |", "|---|---|---|"]
        for row in results.scoreboard.rows:
            without = here.rows.get(row.row)
            out.append(f"| {row.row} | {rate_ci(row.sabot_score)} | "
                       f"{rate_ci(without) if without is not None else 'n/a'} |")
    return out
