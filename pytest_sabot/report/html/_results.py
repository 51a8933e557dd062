"""The results report: a Sabot results directory shaped for the templates.

Numbers are never computed here: every rate, interval, count, the median and the band are
read from results.json as the scorer published them. What is derived is geometry (where a
bar starts and how wide it is) and grouping (which cells share an operator and a task),
and both are checked against results.json's own counts by the tests.

results.json is read through the project's model (so a malformed file gets the usual
error naming the file and the field), then handled as plain JSON: fields a newer writer
adds are shown generically (top-level values in "About this run", rates of a row in "More
rates") instead of being dropped, and optional ones are read with defaults.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_sabot.report.html._cells import CellView, cell_view
from pytest_sabot.report.html._common import is_rate
from pytest_sabot.report.render import surfaces_shown

# Fields the page shows in their own place; anything else is listed generically.
SHOWN_TOP = {
    "schema_version", "tool", "wave", "rules", "wave_rules", "model", "fixture", "label",
    "registration_hash", "versions", "off_pin", "selection", "scoreboard", "cells",
    "structural_zeros", "judge", "spend", "disclosures", "model_calls", "outside_row",
    "gates", "flags_protocol",
}
SHOWN_RATES = {
    "sabot_score", "soft_notice", "reaction", "recovery", "recovery_without_detection",
    "wave1_mapping", "union", "mapping_permissive", "mapping_narrow", "anchored_flag",
    "any_flag", "strict_floor", "reaction_causal", "soft_notice_judged",
    "recovery_without_detection_judged",
}
SHOWN_NESTED = {
    "selection": {"registered", "selected", "recorded", "missing"},
    "judge": {"backend", "judged", "errors", "kappa", "kappa_pairs", "observed_agreement",
              "low_confidence", "kappa_note", "note", "unjudged", "noticed", "double_judged"},
}
EXCLUSION_ORDER = ("RUN_ERROR", "BASELINE_FAIL", "INJECTION_UNVERIFIED")

# Funnel chart geometry (SVG user units).
FUNNEL_X0 = 96.0
FUNNEL_W = 300.0
FUNNEL_LINE = 24.0
FUNNEL_TOP = 22.0
FUNNEL_BAR = 15.0
# Heatmap geometry.
HEAT_X0 = 34.0
HEAT_Y0 = 22.0
HEAT_W = 52.0
HEAT_H = 26.0
LOW_RGB = (244, 246, 248)
HIGH_RGB = (27, 110, 64)


@dataclass(frozen=True)
class Segment:
    key: str
    label: str
    count: int
    x: float
    width: float


@dataclass(frozen=True)
class FunnelLine:
    label: str
    y: float
    segments: list[Segment]
    total: int
    share: float | None  # the row's published rate for this line
    share_label: str


@dataclass(frozen=True)
class Funnel:
    """One row's funnel: detection (hard, soft, unjudged, missed), reacted, recovered."""

    row: str
    valid: int
    lines: list[FunnelLine]
    gap: Segment | None  # the soft segment, bracketed as the override gap
    height: float
    x0: float = FUNNEL_X0
    bar_width: float = FUNNEL_W
    bar_height: float = FUNNEL_BAR


@dataclass(frozen=True)
class HeatBox:
    operator: str
    task: str
    x: float
    y: float
    k: int
    n: int
    excluded: int
    fill: str
    ink: str
    title: str
    first: str | None  # anchor of the first cell in the box


@dataclass(frozen=True)
class Heatmap:
    row: str
    operators: list[str]
    tasks: list[str]
    boxes: list[HeatBox]
    width: float
    height: float
    x0: float = HEAT_X0
    y0: float = HEAT_Y0
    box_w: float = HEAT_W
    box_h: float = HEAT_H


@dataclass
class RowView:
    """One scoreboard row as results.json has it, with its charts and extra rates."""

    name: str
    data: dict[str, Any]
    funnel: Funnel
    heatmap: Heatmap
    extra_rates: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class SliceTable:
    """The per-operator or per-task table's exclusions: per code, in each row (section
    3.3's per-cell appendix), as the scoreboard's slices published them."""

    title: str
    label: str
    rows: list[str]
    slices: list[dict[str, Any]]


@dataclass
class ResultsView:
    results: dict[str, Any]
    rows: list[RowView]
    cells: list[CellView]
    extra_rate_names: list[str]
    other_fields: dict[str, Any]
    banners: list[str]
    judge: dict[str, Any] | None
    low_confidence: bool
    flags_wave: bool
    excluded_by_code: dict[str, list[dict[str, Any]]]
    whole_wave: bool
    layout: str
    pages_dir: str
    partial: str | None = None
    outside: str | None = None
    """'row <name>: <module:callable> (trusted local agent)' (report/render.py)."""
    disclosures: list[str] = field(default_factory=list)
    credits: str = ""
    reaction_note: str = ""
    soft_tier_note: str = ""
    unjudged_rows: list[RowView] = field(default_factory=list)
    slice_tables: list[SliceTable] = field(default_factory=list)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _segments(parts: list[tuple[str, str, int]], total: int) -> list[Segment]:
    segments, x = [], FUNNEL_X0
    for key, label, count in parts:
        width = FUNNEL_W * count / total if total else 0.0
        segments.append(Segment(key=key, label=label, count=count, x=round(x, 2),
                                width=round(width, 2)))
        x += width
    return segments


def funnel(row: dict[str, Any], cells: list[dict[str, Any]]) -> Funnel:
    """The row's funnel from its published rates; the part neither hard nor soft is split
    into UNJUDGED (where the verdicts carry it) and MISSED."""
    valid = _int(row.get("valid"))
    hard = _int((row.get("sabot_score") or {}).get("k"))
    notice = _int((row.get("soft_notice") or {}).get("k"))
    reacted = _int((row.get("reaction") or {}).get("k"))
    recovered = _int((row.get("recovery") or {}).get("k"))
    lucky = _int((row.get("recovery_without_detection") or {}).get("k"))
    unjudged = sum(
        1 for c in cells
        if c.get("kind") == "fault" and c.get("excluded") is None
        and c.get("detection") == "UNJUDGED"
    )
    soft = max(0, notice - hard)
    missed = max(0, valid - notice - unjudged)
    detection = [("hard", "hard", hard), ("soft", "soft", soft)]
    if unjudged:
        detection.append(("unjudged", "unjudged", unjudged))
    detection.append(("missed", "missed", missed))
    def value(name: str) -> float | None:
        published = (row.get(name) or {}).get("value")
        return published if isinstance(published, int | float) else None

    lines = [
        FunnelLine("detected", FUNNEL_TOP, _segments(detection, valid), valid,
                   value("sabot_score"), "hard"),
        FunnelLine("reacted", FUNNEL_TOP + FUNNEL_LINE,
                   _segments([("reacted", "reacted", reacted)], valid), valid,
                   value("reaction"), "reacted"),
        FunnelLine("recovered", FUNNEL_TOP + 2 * FUNNEL_LINE,
                   _segments([("recovered", "after a notice", max(0, recovered - lucky)),
                              ("lucky", "without detection", lucky)], valid), valid,
                   value("recovery"), "recovered"),
    ]
    gap = lines[0].segments[1] if soft else None
    return Funnel(row=str(row.get("row", "?")), valid=valid, lines=lines, gap=gap,
                  height=FUNNEL_TOP + 3 * FUNNEL_LINE + 4)


def _colour(value: float) -> tuple[str, str]:
    rgb = [round(lo + (hi - lo) * value) for lo, hi in zip(LOW_RGB, HIGH_RGB, strict=True)]
    return f"rgb({rgb[0]},{rgb[1]},{rgb[2]})", ("#ffffff" if value >= 0.5 else "#1d2327")


def heatmap(row: str, cells: list[CellView]) -> Heatmap:
    """Operator x task: hard-tier detections over valid fault runs, seeds pooled."""
    faults = [c for c in cells if c.kind == "fault" and c.row == row]
    operators = sorted({c.operator for c in faults}, key=_natural)
    tasks = sorted({c.task for c in faults}, key=_natural)
    boxes = []
    for ti, task in enumerate(tasks):
        for oi, operator in enumerate(operators):
            here = [c for c in faults if c.operator == operator and c.task == task]
            valid = [c for c in here if c.excluded is None]
            k = sum(1 for c in valid if c.verdict.get("detected_hard") is True)
            n = len(valid)
            fill, ink = _colour(k / n) if n else ("url(#none)", "#1d2327")
            listed = "; ".join(
                f"s{c.seed} {c.status}" for c in sorted(here, key=lambda c: str(c.seed))
            )
            boxes.append(
                HeatBox(
                    operator=operator,
                    task=task,
                    x=HEAT_X0 + oi * HEAT_W,
                    y=HEAT_Y0 + ti * HEAT_H,
                    k=k,
                    n=n,
                    excluded=len(here) - n,
                    fill=fill,
                    ink=ink,
                    title=f"{row} {operator} {task}: {k} of {n} valid detected hard"
                    + (f", {len(here) - n} excluded" if len(here) > n else "")
                    + (f" ({listed})" if listed else ""),
                    first=here[0].anchor if here else None,
                )
            )
    return Heatmap(
        row=row,
        operators=operators,
        tasks=tasks,
        boxes=boxes,
        width=HEAT_X0 + max(1, len(operators)) * HEAT_W + 4,
        height=HEAT_Y0 + max(1, len(tasks)) * HEAT_H + 4,
    )


def _natural(text: str) -> tuple[str, int]:
    head = text.rstrip("0123456789")
    tail = text[len(head):]
    return head, int(tail) if tail else -1


def _sort_key(cell: CellView) -> tuple[Any, ...]:
    return (cell.row, cell.kind != "baseline", _natural(cell.operator), _natural(cell.task),
            str(cell.seed))


def banners(results: dict[str, Any], status_line: str | None) -> list[str]:
    """What must be read before any number: an incomplete session, missing records, off-pin
    packages, a gate the session failed on. (The fixture or live label is shown by itself,
    just below.)"""
    out = []
    if status_line:
        out.append(f"INCOMPLETE: {status_line}; these numbers cover the recorded cells only")
    selection = results.get("selection") or {}
    if selection.get("complete") is False and not status_line:
        out.append("INCOMPLETE: the session did not finish; these numbers cover the recorded "
                   "cells only")
    missing = selection.get("missing") or []
    if missing:
        out.append(f"{len(missing)} selected cell(s) have no record yet (interrupted? rerun "
                   "with --sabot-resume)")
    off_pin = results.get("off_pin") or {}
    if off_pin:
        out.append("OFF-PIN: " + "; ".join(f"{k} {v}" for k, v in sorted(off_pin.items()))
                   + " (the standard pins other versions)")
    for gate in results.get("gates") or []:  # the session failed on it (SPEC I43)
        if isinstance(gate, dict) and gate.get("passed") is False:
            out.append(f"GATE FAILED: {gate.get('name')}: {gate.get('message')}")
    return out


def other_fields(results: dict[str, Any]) -> dict[str, Any]:
    """Fields of results.json the page has no place for (a newer writer's), so they are
    listed rather than lost: top-level ones, and new keys of the selection and judge blocks."""
    found = {k: v for k, v in sorted(results.items()) if k not in SHOWN_TOP}
    for block, shown in SHOWN_NESTED.items():
        value = results.get(block)
        if isinstance(value, dict):
            found.update({
                f"{block}.{k}": v for k, v in sorted(value.items())
                if k not in shown and v not in (None, "", [], {})
            })
    return found


def build(
    results_dir: Path,
    results: dict[str, Any],
    *,
    status_line: str | None,
    layout: str,
    pages_dir: str,
    words: dict[str, Any] | None = None,
) -> ResultsView:
    """Shape a results directory for the results template."""
    raw_cells = [c for c in results.get("cells") or [] if isinstance(c, dict)]
    cells = sorted((cell_view(results_dir, c) for c in raw_cells), key=_sort_key)
    by_row: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in raw_cells:
        by_row[str(c.get("row"))].append(c)
    board = results.get("scoreboard") or {}
    rows = []
    extra_names: set[str] = set()
    for row in board.get("rows") or []:
        name = str(row.get("row", "?"))
        extra = {k: v for k, v in row.items() if k not in SHOWN_RATES and is_rate(v)}
        extra_names |= set(extra)
        rows.append(
            RowView(name=name, data=row, funnel=funnel(row, by_row.get(name, [])),
                    heatmap=heatmap(name, cells), extra_rates=extra)
        )
    excluded: dict[str, list[dict[str, Any]]] = {code: [] for code in EXCLUSION_ORDER}
    for row in board.get("rows") or []:
        for item in row.get("excluded_cells") or []:
            excluded.setdefault(str(item.get("code")), []).append(
                {**item, "row": row.get("row")}
            )
    judge = results.get("judge") if isinstance(results.get("judge"), dict) else None
    selection = results.get("selection") or {}
    zeros = len(results.get("structural_zeros") or [])
    words = words or {}
    partial = words.get("partial")
    disclosures = list(words.get("disclosures") or [])
    names = [row.name for row in rows]
    tables = [
        SliceTable(title=title, label=label, rows=names,
                   slices=[s for s in board.get(key) or [] if isinstance(s, dict)])
        for title, label, key in (("Per operator", "operator", "by_operator"),
                                  ("Per task", "task", "by_task"))
        if board.get(key)
    ]
    return ResultsView(
        results=results,
        rows=rows,
        cells=cells,
        extra_rate_names=sorted(extra_names),
        other_fields=other_fields(results),
        banners=banners(results, status_line),
        judge=judge,
        low_confidence=bool(judge and judge.get("low_confidence")),
        flags_wave=surfaces_shown(results.get("flags_protocol"), str(results.get("rules", ""))),
        excluded_by_code=excluded,
        whole_wave=_int(selection.get("selected")) + zeros >= _int(selection.get("registered")),
        layout=layout,
        pages_dir=pages_dir,
        partial=partial if isinstance(partial, str) else None,
        outside=outside if isinstance(outside := words.get("outside"), str) else None,
        disclosures=[d for d in disclosures if isinstance(d, str)],
        credits=str(words.get("credits") or ""),
        reaction_note=str(words.get("reaction_note") or ""),
        soft_tier_note=str(words.get("soft_tier_note") or ""),
        unjudged_rows=[row for row in rows if _int(row.data.get("unjudged"))],
        slice_tables=tables,
    )
