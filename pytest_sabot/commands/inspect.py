"""``sabot inspect CELL_DIR [--json]``: one cell's timeline in the terminal; ``sabot inspect
RUN`` of a lab run (its run.json, its folder or its id in the history) prints the lab
run's timeline instead (:func:`inspect_lab`).

Every event of the cell's trace in order, one line each, fitted to the terminal's width:
its position, the agent (component) that produced it, its kind, what it says, and a mark
where the standard looks: ``INJECTION`` where the operator planted its fault, the
detection acts the scorer found (``ACT <act> (<mapping row>)``), the act that counted as
detection (``DETECTED``), and the landing ``PROBE``. Under it: the reviewer's words, the
landing probe, the soft tier's quote, and the cell's verdict and gate, scored from the
record with the same code ``sabot rescore`` uses. The record is only read.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from rich.table import Table

from pytest_sabot.commands.failure import fail
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.exit_codes import EXIT_PASS
from pytest_sabot.core.models.verdict import CellVerdict
from pytest_sabot.core.records import CELLS_DIR
from pytest_sabot.core.trace_io import TRACE_FILE
from pytest_sabot.lab.record import LabRun


class TimelineEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq: int
    agent: str
    kind: str
    what: str
    marks: list[str] = Field(default_factory=list)


class Timeline(BaseModel):
    """What ``sabot inspect --json`` prints."""

    model_config = ConfigDict(extra="forbid")

    cell_id: str
    model: str
    label: str = Field(
        "", description="How its numbers are labelled: a keyless record is a fixture of the "
        "embedded model, never a measurement of an LLM (results.json's label).",
    )
    verdict: str
    funnel: str
    rules: str = Field("", description="The rule version the verdict is read under (the "
                       "one the recording session ran; a board elsewhere may read the same "
                       "record under another, SPEC I98).")
    gate: str
    events: list[TimelineEvent]
    reviewer: list[str] = Field(description="The reviewer's words, one entry per review.")
    probe: str | None = Field(description="The landing probe, in words.")
    soft_quote: str | None = Field(description="The soft-tier judge's quote, if judged.")
    notes: list[str] = Field(default_factory=list)
    tracebacks: list[str] = Field(
        default_factory=list,
        description="The traceback of each run_error the pipeline raised (scrubbed).",
    )


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _what(event: dict[str, Any]) -> str:
    kind, data, text = event["kind"], event.get("data") or {}, event.get("text") or ""
    if kind == "run_start":
        return (f"{data.get('framework')} {data.get('config')} {data.get('operator') or 'baseline'}"
                f" {data.get('task')} seed {data.get('seed')}, model {data.get('model')}")
    if kind == "model_call":
        tools = [str((c.get("function") or {}).get("name")) for c in data.get("tool_calls") or []]
        said = f"call {data.get('call_index')} served by {data.get('model_served')}"
        if data.get("downgraded"):
            said += " (downgraded)"
        if data.get("error"):
            return said + f": error {_short(data['error'])}"
        return said + (f" -> {', '.join(tools)}" if tools else (f": {_short(text)}" if text
                                                               else ""))
    if kind == "tool_call":
        return f"{data.get('tool')}({_short(data.get('arguments'), 50)})"
    if kind == "tool_result":
        return f"{data.get('tool')} {'ok' if data.get('ok') else 'failed'}: {_short(text, 50)}"
    if kind == "injection":
        return (f"{data.get('operator')} at {data.get('seam')} {data.get('target')}: "
                f"{_short(data.get('original'), 25)} -> {_short(data.get('injected'), 25)}")
    if kind == "probe":
        return (f"{data.get('operator')}: landed {data.get('landed')}, consumed "
                f"{data.get('consumed')}; {_short(data.get('evidence'), 50)}")
    if kind == "message":
        return f"{data.get('sender')} -> {data.get('receiver')}: {_short(text, 50)}"
    if kind in ("review", "agent_output"):
        return _short(text)
    if kind == "retry":
        return f"{data.get('source')}: {_short(data.get('reason'))}"
    if kind == "run_end":
        return f"{data.get('status')}" + (f": {_short(data.get('detail'))}" if data.get("detail")
                                          else "")
    if kind == "effect":
        return f"{data.get('tool')} {data.get('target')}: {data.get('detail')}"
    parts = [f"{k}={_short(v, 30)}" for k, v in data.items()]
    return _short(text) if text else ", ".join(parts)


def timeline(cell_dir: Path, root: Path | None = None) -> Timeline:
    """The timeline of one cell's record (read only)."""
    from pytest_sabot.commands.replay import (
        _cell_paths,
        _events,
        _read_outcome,
        _score,
        gate_of,
    )
    from pytest_sabot.judge.run import read_soft_record
    from pytest_sabot.results.outcomes import funnel_word, outcome_of
    from pytest_sabot.results.recorded import session_standard

    cell_id, out_dir, _ = _cell_paths(cell_dir)
    outcome = _read_outcome(Path(cell_dir))
    events = _events(Path(cell_dir))
    start = events[0]["data"]
    marks: dict[int, list[str]] = {}
    notes: list[str] = []
    verdict = funnel = "unscored"
    rules = ""
    try:
        with session_standard(
            out_dir, int(start["wave"]), session=outcome.session, root=root,
            rules=str(start["rules"]),
        ) as std:
            cell = std.cell(cell_id)
            scored = _score(std, cell, Path(cell_dir), out_dir)
            rules = std.rules.version
        verdict = outcome_of(scored).verdict
        if isinstance(scored, CellVerdict):
            funnel = scored.excluded.code if scored.excluded else funnel_word(scored)
            for act in scored.acts:
                tag = f"ACT {act.act} ({act.row})"
                if act.seq == scored.detecting_seq and scored.detected_hard:
                    tag = "DETECTED " + tag
                marks.setdefault(act.seq, []).append(tag)
        else:
            funnel = outcome_of(scored).word
    except (SabotDataError, KeyError, ValueError) as exc:
        notes.append(f"not scored ({exc}): the timeline shows the trace only")
    reviewer: list[str] = []
    tracebacks: list[str] = []
    probe: str | None = None
    rows: list[TimelineEvent] = []
    for event in events:
        seq, kind = int(event["seq"]), str(event["kind"])
        here = list(marks.get(seq, []))
        if kind == "injection":
            here.insert(0, "INJECTION")
        if kind == "probe":
            here.insert(0, "PROBE")
            probe = _what(event)
        if kind == "review" and event.get("text"):
            reviewer.append(str(event["text"]).strip())
        if kind == "run_error" and event.get("text"):
            tracebacks.append(str(event["text"]).rstrip())
        rows.append(TimelineEvent(seq=seq, agent=str(event.get("component") or ""), kind=kind,
                                  what=_what(event), marks=here))
    soft = read_soft_record(Path(cell_dir))
    quote = None
    if soft is not None and soft.first is not None and soft.first.verdict is not None:
        quote = str(getattr(soft.first.verdict, "evidence_quote", "") or "") or None
    gate = gate_of(outcome)
    from pytest_sabot.results import model_label

    model = str(start.get("model"))
    try:
        label = model_label(model)
    except ValueError:  # a spec this version cannot parse: its own words stand
        label = model
    return Timeline(
        cell_id=cell_id, model=model, label=label, verdict=verdict, funnel=funnel, rules=rules,
        gate=f"{gate.outcome} ({gate.reason})", events=rows, reviewer=reviewer, probe=probe,
        soft_quote=quote, notes=notes, tracebacks=tracebacks,
    )


def timeline_table(events: list[TimelineEvent], width: int) -> Table:
    """The events as a table of ``width`` columns: position, agent and kind keep their
    widths, the mark keeps up to a third of the line, and what each event says takes the
    rest (cut with an ellipsis; ``--json`` has every word). Below 70 columns the agent is
    left out (it is in the mark's act names and in --json)."""
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold",
                  expand=False)

    def widest(values: list[str], header: str) -> int:
        return max([len(header), *(len(v) for v in values)])

    fixed: list[tuple[str, list[str], str]] = [
        ("seq", [str(e.seq) for e in events], "right"),
        ("kind", [e.kind for e in events], "left"),
    ]
    if width >= 70:
        fixed.insert(1, ("agent", [e.agent for e in events], "left"))
    used = 0
    for header, values, justify in fixed:
        w = widest(values, header)
        used += w + 2  # its width and the two spaces after it
        table.add_column(header, no_wrap=True, width=w,
                         justify="right" if justify == "right" else "left")
    marks = ["; ".join(e.marks) for e in events]
    mark_w = min(widest(marks, "mark"), max(4, (width - used) // 3))
    table.add_column("mark", no_wrap=True, overflow="ellipsis", width=mark_w)
    what_w = max(8, min(widest([e.what for e in events], "what"), width - used - mark_w - 6))
    table.add_column("what", no_wrap=True, overflow="ellipsis", width=what_w)
    for e, mark in zip(events, marks, strict=True):
        cells = [str(e.seq)] + ([e.agent] if width >= 70 else []) + [e.kind, mark, e.what]
        table.add_row(*cells)
    return table


def print_timeline(t: Timeline, width: int | None = None) -> None:
    from rich.text import Text

    from pytest_sabot.report.terminal import console, print_lines

    out = console(width)
    print_lines(out, [f"cell {t.cell_id} ({t.model}): {len(t.events)} events",
                      *([t.label] if t.label and t.label != t.model else [])])
    out.print(timeline_table(t.events, out.width))
    out.print(Text(""))
    for n, words in enumerate(t.reviewer):
        print_lines(out, [f"reviewer, review {n}:", *("  " + line for line in words.splitlines())])
    for words in t.tracebacks:
        print_lines(out, ["the pipeline's traceback:",
                          *("  " + line for line in words.splitlines())])
    lines = [f"landing probe: {t.probe or 'none in the trace'}"]
    if t.soft_quote is not None:
        lines.append(f"soft tier quote: {t.soft_quote!r}")
    lines += [*([f"read under rules {t.rules}"] if t.rules else []),
              f"verdict: {t.verdict} ({t.funnel})", f"gate: {t.gate}",
              *[f"note: {n}" for n in t.notes]]
    print_lines(out, lines)


def _lab_body(record: LabRun) -> dict[str, Any]:
    """A lab run's timeline as JSON, with the usage the lab observed and the client's."""
    from pytest_sabot.report.lab import lab_timeline

    body = lab_timeline(record).model_dump(mode="json")
    body["usage"] = {
        "observed": record.measurement.provider_usage.model_dump(mode="json"),
        "client_registered": (record.client_usage.model_dump(mode="json")
                              if record.client_usage is not None else None),
    }
    return body


def inspect_lab(record: LabRun, as_json: bool) -> int:
    """A lab run's timeline: requests, deliveries, effects, observations, waits, faults and
    violations in order, then the gate; then the model usage the lab observed and, apart,
    what an MCP client registered (with each registration's checks)."""
    from pytest_sabot.report.html._lab_usage import usage_lines
    from pytest_sabot.report.lab import lab_timeline, print_lab_timeline
    from pytest_sabot.report.terminal import console, print_lines

    t = lab_timeline(record)
    if as_json:
        print(json.dumps(_lab_body(record), indent=2))
    else:
        out = console()
        print_lab_timeline(out, t)
        print_lines(out, usage_lines(record))
    return EXIT_PASS


def cmd_inspect(args: argparse.Namespace) -> int:
    from pytest_sabot.commands.lab_refs import lab_run_of
    from pytest_sabot.history import chosen_history

    try:
        lab = lab_run_of(args.cell_dir, chosen_history(getattr(args, "history", None)))
    except SabotDataError as exc:
        return fail("sabot inspect", exc)
    cell = Path(args.cell_dir)
    matrix_cell = (cell / TRACE_FILE).is_file() and cell.resolve().parent.name == CELLS_DIR
    if lab is not None and not matrix_cell:
        return inspect_lab(lab[0], args.json)
    try:
        t = timeline(cell, args.sabot_root)
    except SabotDataError as exc:
        return fail("sabot inspect", exc)
    # A cell of a lab matrix is both: the Sabot funnel of its trace, then its lab run.
    if args.json:
        body = t.model_dump(mode="json")
        if lab is not None:
            body["lab"] = _lab_body(lab[0])
        print(json.dumps(body, indent=2))
        return EXIT_PASS
    print_timeline(t)
    if lab is not None:
        print()
        inspect_lab(lab[0], False)
    return EXIT_PASS


__all__ = ["Timeline", "TimelineEvent", "cmd_inspect", "inspect_lab", "print_timeline",
           "timeline"]
