"""One cell as the report shows it: its verdict, its trace as a timeline with the injection
point and every detection act marked, the own checks' words, the landing probe, the
soft-tier quote and the outcome.

Everything is read from the cell's folder (``cells/<cell_id>/``: events.jsonl,
outcome.json, soft.json, not_run.json) and from the cell's entry in results.json. The
trace is read line by line as plain JSON, so a line a newer writer added, or a line that
is damaged, is shown (or named) instead of stopping the whole report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_sabot.report.html._common import TEXT_LIMIT, slug

TRACE_FILE = "events.jsonl"
OUTCOME_FILE = "outcome.json"
SOFT_FILE = "soft.json"
NOT_RUN_FILE = "not_run.json"

# Event kinds grouped for the timeline's colours.
GROUPS = {
    "model_call": "model",
    "tool_call": "tool",
    "tool_result": "tool",
    "effect": "tool",
    "agent_output": "agent",
    "message": "agent",
    "artifact": "agent",
    "review": "check",
    "guardrail": "check",
    "route": "check",
    "retry": "check",
    "interrupt": "check",
    "escalation": "check",
    "replan": "check",
    "ledger": "check",
    "stop_reason": "check",
    "injection": "fault",
    "probe": "fault",
    "run_error": "error",
}

# Where an own check's words are, per event kind: the text, or a field of the payload.
WORDS = {
    "review": "text",
    "guardrail": "feedback",
    "route": "reason",
    "retry": "reason",
    "interrupt": "reason",
    "escalation": "message",
    "replan": "reason",
    "stop_reason": "text",
}

STRIP_WIDTH = 720.0
STRIP_PAD = 10.0


@dataclass
class EventView:
    """One trace event, ready to show."""

    seq: int
    kind: str
    component: str
    text: str
    cut: int  # characters of the text not shown (the full text is in events.jsonl)
    data: dict[str, Any]
    summary: str
    anchor: str
    group: str
    marks: list[str] = field(default_factory=list)
    same_as: int | None = None  # a model reply shown in full at this other seq
    after_injection: bool | None = None


@dataclass(frozen=True)
class Tick:
    seq: int
    x: float
    group: str
    anchor: str
    title: str


@dataclass(frozen=True)
class ActMark:
    x: float
    label: str
    detecting: bool
    anchor: str
    title: str
    labelled: bool  # room for its name above the line (else the tooltip carries it)


@dataclass(frozen=True)
class Strip:
    """The trace drawn as one line: a tick per event, the injection and each act marked."""

    width: float
    ticks: list[Tick]
    injection_x: float | None
    acts: list[ActMark]


@dataclass
class Words:
    """What an own check said (a review, a guardrail's feedback, a retry's reason, ...)."""

    seq: int
    kind: str
    component: str
    text: str
    anchor: str
    after_injection: bool | None


@dataclass
class CellView:
    """Everything the report shows about one cell."""

    id: str
    anchor: str
    kind: str  # 'fault' or 'baseline'
    row: str
    operator: str
    task: str
    seed: Any
    verdict: dict[str, Any]
    status: str
    status_class: str
    outcome: dict[str, Any] | None
    soft: dict[str, Any] | None
    not_run: dict[str, Any] | None
    trace_path: str  # relative to the results directory
    events: list[EventView]
    trace_note: str | None
    injection: EventView | None
    probe: EventView | None
    words: list[Words]
    acts: list[dict[str, Any]]
    flags: list[dict[str, Any]]
    strip: Strip | None
    page: str  # file name of the cell's own page (pages layout)

    @property
    def excluded(self) -> dict[str, Any] | None:
        value = self.verdict.get("excluded")
        return value if isinstance(value, dict) else None


def _read_json(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    if not path.is_file():
        return None, None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        return None, f"{path.name}: not readable as JSON ({exc})"
    if not isinstance(value, dict):
        return None, f"{path.name}: expected a JSON object"
    return value, None


def read_events(run_dir: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The trace's events as plain objects, and a note when something could not be read.

    A run killed mid-write leaves ``events.jsonl.partial``; it is read (and said to be)."""
    path = run_dir / TRACE_FILE
    note = None
    if not path.is_file():
        partial = run_dir / (TRACE_FILE + ".partial")
        if not partial.is_file():
            return [], "no trace recorded (events.jsonl is absent)"
        path, note = partial, "the trace never finished: this is events.jsonl.partial"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return [], f"{path.name}: not readable ({exc})"
    events: list[dict[str, Any]] = []
    bad: list[int] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            bad.append(number)
            continue
        if isinstance(raw, dict):
            events.append(raw)
        else:
            bad.append(number)
    if bad:
        shown = ", ".join(str(n) for n in bad[:5]) + (" ..." if len(bad) > 5 else "")
        note = (note + "; " if note else "") + f"{path.name}: line(s) {shown} not JSON objects"
    return events, note


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def summarise(kind: str, data: dict[str, Any]) -> str:
    """One line about an event's payload (the whole payload is in events.jsonl)."""
    if kind == "model_call":
        served = data.get("model_served", "?")
        requested = data.get("model_requested", "?")
        parts = [f"#{data.get('call_index', '?')} served by {served}"
                 + (f" (requested {requested})" if requested != served else "")]
        tokens = (data.get("prompt_tokens"), data.get("completion_tokens"))
        if all(isinstance(t, int) for t in tokens):
            parts.append(f"{tokens[0]}+{tokens[1]} tokens")
        if data.get("downgraded"):
            parts.append("DOWNGRADED (O4)")
        if data.get("error"):
            parts.append(f"error: {_short(data['error'])}")
        return ", ".join(parts)
    if kind == "injection":
        return (
            f"{data.get('operator', '?')} at {data.get('seam', '?')} "
            f"{data.get('target', '')}: {_short(data.get('original', ''))!s} -> "
            f"{_short(data.get('injected', ''))!s}"
        )
    if kind == "probe":
        return (
            f"landed {data.get('landed')}, consumed {data.get('consumed')}: "
            f"{_short(data.get('evidence', ''), 300)}"
        )
    shown = {k: v for k, v in data.items() if v not in ("", None, [], {})}
    if kind == "run_start":
        shown = {k: shown[k] for k in ("model", "rules", "attempt") if k in shown}
    return " ".join(f"{k}={_short(v, 120)}" for k, v in shown.items())


def _marks_by_seq(verdict: dict[str, Any]) -> dict[int, list[str]]:
    marks: dict[int, list[str]] = {}
    detecting = verdict.get("detecting_seq")
    for act in verdict.get("acts") or []:
        if isinstance(act, dict) and isinstance(act.get("seq"), int):
            counted = act.get("counts_permissive") or act.get("counts_narrow")
            label = f"act:{act.get('act', '?')}" + ("" if counted else " (not counted)")
            marks.setdefault(act["seq"], []).append(label)
    for flag in verdict.get("flags") or []:
        if isinstance(flag, dict) and isinstance(flag.get("seq"), int):
            label = "flag (counted)" if flag.get("counted") else "flag"
            marks.setdefault(flag["seq"], []).append(label)
    if isinstance(detecting, int):
        marks.setdefault(detecting, []).append("detecting")
    return marks


def _event_views(
    cell_anchor: str, events: list[dict[str, Any]], verdict: dict[str, Any]
) -> list[EventView]:
    injection_seq = verdict.get("injection_seq")
    if not isinstance(injection_seq, int):
        injection_seq = next(
            (e.get("seq") for e in events if e.get("kind") == "injection"), None
        )
    marks = _marks_by_seq(verdict)
    shown_texts: dict[str, int] = {}
    for event in events:
        text = event.get("text")
        if event.get("kind") != "model_call" and isinstance(text, str) and text:
            shown_texts.setdefault(text, int(event.get("seq", -1)))
    views: list[EventView] = []
    for position, event in enumerate(events):
        seq = event.get("seq")
        seq = seq if isinstance(seq, int) else position
        kind = str(event.get("kind", "?"))
        raw_text, raw_data = event.get("text"), event.get("data")
        text = raw_text if isinstance(raw_text, str) else ""
        data: dict[str, Any] = raw_data if isinstance(raw_data, dict) else {}
        same_as = None
        if kind == "model_call" and text and text in shown_texts:
            same_as, text = shown_texts[text], ""
        event_marks = list(marks.get(seq, []))
        if kind in ("injection", "probe"):
            event_marks.insert(0, kind)
        views.append(
            EventView(
                seq=seq,
                kind=kind,
                component=str(event.get("component", "")),
                text=text[:TEXT_LIMIT],
                cut=max(0, len(text) - TEXT_LIMIT),
                data=data,
                summary=summarise(kind, data),
                anchor=f"{cell_anchor}-ev{seq}",
                group=GROUPS.get(kind, "other"),
                marks=event_marks,
                same_as=same_as,
                after_injection=None if not isinstance(injection_seq, int) else (
                    seq >= injection_seq
                ),
            )
        )
    return views


def _strip(events: list[EventView], acts: list[dict[str, Any]], detecting: Any) -> Strip | None:
    if not events:
        return None
    last = max(e.seq for e in events) or 1
    step = (STRIP_WIDTH - 2 * STRIP_PAD) / last

    def x(seq: int) -> float:
        return round(STRIP_PAD + seq * step, 1)

    by_seq = {e.seq: e for e in events}
    ticks = [
        Tick(seq=e.seq, x=x(e.seq), group=e.group, anchor=e.anchor,
             title=f"{e.seq} {e.kind} ({e.component})")
        for e in events
    ]
    injection = next((e for e in events if e.kind == "injection"), None)
    marks = []
    taken: list[tuple[float, float]] = []
    for act in sorted(acts, key=lambda a: (a.get("seq") != detecting, a.get("seq", 0))):
        seq = act.get("seq")
        if not isinstance(seq, int) or seq not in by_seq:
            continue
        label = str(act.get("act", "?"))
        span = (x(seq) - 3.3 * len(label) - 3, x(seq) + 3.3 * len(label) + 3)
        room = all(span[1] < lo or span[0] > hi for lo, hi in taken)
        if room:
            taken.append(span)
        marks.append(
            ActMark(
                x=x(seq),
                label=label,
                detecting=seq == detecting,
                anchor=by_seq[seq].anchor,
                title=f"{label} at seq {seq} by {act.get('component', '?')}",
                labelled=room,
            )
        )
    return Strip(
        width=STRIP_WIDTH,
        ticks=ticks,
        injection_x=x(injection.seq) if injection is not None else None,
        acts=marks,
    )


def _words(events: list[EventView]) -> list[Words]:
    found = []
    for e in events:
        where = WORDS.get(e.kind)
        if where is None:
            continue
        text = e.text if where == "text" else e.data.get(where, "")
        if isinstance(text, str) and text.strip():
            found.append(
                Words(seq=e.seq, kind=e.kind, component=e.component, text=text,
                      anchor=e.anchor, after_injection=e.after_injection)
            )
    return found


def status_of(verdict: dict[str, Any], not_run: dict[str, Any] | None) -> tuple[str, str]:
    """The cell's headline status and its CSS class."""
    excluded = verdict.get("excluded")
    if isinstance(excluded, dict):
        code = str(excluded.get("code", "EXCLUDED"))
        return code + (" (not run)" if not_run else ""), "excluded"
    if verdict.get("kind") == "baseline":
        status = str(verdict.get("status", "?"))
        return f"baseline {status}", "passed" if status == "passed" else "failed"
    detection = str(verdict.get("detection", "?"))
    return detection, {
        "DETECTED_HARD": "hard",
        "DETECTED_SOFT": "soft",
        "MISSED": "missed",
    }.get(detection, "unjudged")


def cell_view(results_dir: Path, verdict: dict[str, Any]) -> CellView:
    """Read one cell's folder and shape it for the templates."""
    cell_id = str(verdict.get("cell_id", "?"))
    run_dir = results_dir / "cells" / cell_id
    anchor = "cell-" + slug(cell_id)
    notes: list[str] = []
    outcome, err = _read_json(run_dir / OUTCOME_FILE)
    notes += [err] if err else []
    soft, err = _read_json(run_dir / SOFT_FILE)
    notes += [err] if err else []
    not_run, err = _read_json(run_dir / NOT_RUN_FILE)
    notes += [err] if err else []
    if not_run is not None:
        raw_events: list[dict[str, Any]] = []
    else:
        raw_events, err = read_events(run_dir)
        notes += [err] if err else []
    events = _event_views(anchor, raw_events, verdict)
    acts = [a for a in verdict.get("acts") or [] if isinstance(a, dict)]
    by_seq = {e.seq: e for e in events}
    acts = [{**a, "anchor": by_seq[a["seq"]].anchor if a.get("seq") in by_seq else None}
            for a in acts]
    flags = [f for f in verdict.get("flags") or [] if isinstance(f, dict)]
    flags = [{**f, "anchor": by_seq[f["seq"]].anchor if f.get("seq") in by_seq else None}
             for f in flags]
    status, status_class = status_of(verdict, not_run)
    kind = str(verdict.get("kind", "fault"))
    return CellView(
        id=cell_id,
        anchor=anchor,
        kind=kind,
        row=str(verdict.get("row", "?")),
        operator=str(verdict.get("operator") or "baseline"),
        task=str(verdict.get("task", "?")),
        seed=verdict.get("seed", "?"),
        verdict=verdict,
        status=status,
        status_class=status_class,
        outcome=outcome,
        soft=soft,
        not_run=not_run,
        trace_path=f"cells/{cell_id}/{TRACE_FILE}",
        events=events,
        trace_note="; ".join(notes) or None,
        injection=next((e for e in events if e.kind == "injection"), None),
        probe=next((e for e in events if e.kind == "probe"), None),
        words=_words(events),
        acts=acts,
        flags=flags,
        strip=_strip(events, acts, verdict.get("detecting_seq")),
        page=slug(cell_id) + ".html",
    )
