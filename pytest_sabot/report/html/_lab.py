"""The lab page: a run record (run.json) shaped for the template.

The four evidence streams stay four columns: every event sits in its own stream's column,
on the line of its ``seq`` (the one counter the streams share), so the history reads top
to bottom without the streams ever being merged. Each violation carries links to the
events it cites (the record's own evidence references) and each cited event links back
to the violations citing it. Nothing here judges the run: the gate, the violations and
the probes are the record's.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pytest_sabot.lab.evidence import (
    DeliveryEvent,
    EffectEvent,
    ObservationEvent,
    RequestEvent,
    WaitEvent,
)
from pytest_sabot.lab.observation import Observation
from pytest_sabot.lab.record import LabRun
from pytest_sabot.report.html._lab_usage import UsageView, build_usage
from pytest_sabot.report.lab import FIXTURE_NOTE
from pytest_sabot.report.lab_diagnostics import Diagnostic, diagnose

STREAMS = ("requests", "deliveries", "effects", "observations")


def anchor(stream: str, event_id: str) -> str:
    return f"ev-{stream}-{event_id}"


def _json(value: Any, limit: int = 400) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _answer(observation: Observation | None) -> str:
    if observation is None:
        return ""
    if observation.ok:
        return "ok " + _json(observation.result)
    error = observation.error
    if error is None:
        return "error"
    retry = f" (retry after {error.retry_after_ms} ms)" if error.retry_after_ms else ""
    return f"error {error.code}: {error.message}{retry}"


@dataclass
class Cell:
    """One event in its stream's column."""

    stream: str
    id: str
    anchor: str
    title: str
    lines: list[str]
    cited_by: list[tuple[str, str]] = field(default_factory=list)  # (rule, violation anchor)
    faults: list[str] = field(default_factory=list)


@dataclass
class Line:
    seq: int
    at_ms: int
    column: int  # 0..3: requests, deliveries, effects, observations
    cell: Cell


@dataclass
class ViolationView:
    rule: str
    kind: str
    message: str
    anchor: str
    refs: list[tuple[str, str, str]]  # (stream, id, anchor)


@dataclass
class Change:
    """One committed effect as a state change: the entity's fields before and after."""

    effect: str
    anchor: str
    actor: str
    kind: str
    entity: str
    before_version: int | None
    after_version: int | None
    via: str
    fields: list[tuple[str, str, str, bool]]  # (field, before, after, changed)
    unchanged: int = 0  # fields of a change left as they were (not shown)


@dataclass
class LabView:
    record: LabRun
    fixture_note: str
    lines: list[Line]
    streams: tuple[str, ...]
    violations: list[ViolationView]
    coverage: list[dict[str, Any]]
    counts: dict[str, int]
    changes: list[Change]
    diagnostics: list[Diagnostic]
    usage: UsageView


def _value(entity: dict[str, Any] | None, key: str) -> str:
    if entity is None or key not in entity:
        return "-"
    return _json(entity[key], 120)


def changes(record: LabRun) -> list[Change]:
    """Every effect as before/after versions and fields (a creation has no before)."""
    out = []
    for e in record.streams.effects:
        keys = sorted(set(e.after) | set(e.before or {}))
        # a creation shows every field; a change shows the fields it changed
        fields = [(k, _value(e.before, k), _value(e.after, k), True) for k in keys
                  if e.before is None or e.before.get(k) != e.after.get(k)]
        out.append(Change(effect=e.effect_id, anchor=anchor("effects", e.effect_id),
                          actor=e.actor, kind=e.kind, entity=e.entity,
                          before_version=e.before_version, after_version=e.after_version,
                          via=", ".join(x for x in (e.delivery_id, e.request_id) if x),
                          fields=fields,
                          unchanged=0 if e.before is None else len(keys) - len(fields)))
    return out


def _request(e: RequestEvent) -> Cell:
    return Cell("requests", e.request_id, anchor("requests", e.request_id),
                f"{e.tool} (call {e.call_number})", [_json(e.arguments)])


def _wait(e: WaitEvent) -> Cell:
    return Cell("waits", e.wait_id, anchor("waits", e.wait_id), f"wait {e.ms} ms", [])


def _delivery(e: DeliveryEvent) -> Cell:
    lines = [f"carries {e.request_id}, copy {e.copy_number}, {e.view}"
             + (f" {e.snapshot}" if e.snapshot is not None else "")
             + (", answered from the idempotency store" if e.replayed_operation else ""),
             "answer: " + _answer(e.response)]
    if e.authoritative_response is not None:
        lines.append("the current state would have answered: "
                     + _answer(e.authoritative_response))
    return Cell("deliveries", e.delivery_id, anchor("deliveries", e.delivery_id), e.tool, lines)


def _effect(e: EffectEvent) -> Cell:
    versions = ""
    if e.before_version is not None or e.after_version is not None:
        versions = f" v{e.before_version if e.before_version is not None else '-'}"
        versions += f" -> v{e.after_version}"
    via = ", ".join(x for x in (e.delivery_id, e.request_id) if x)
    lines = [f"{e.actor}: {e.entity}{versions}" + (f" (via {via})" if via else "")]
    if e.operation_key:
        lines.append(f"operation key {e.operation_key}")
    lines.append("after: " + _json(e.after))
    return Cell("effects", e.effect_id, anchor("effects", e.effect_id), e.kind, lines)


def _observation(e: ObservationEvent) -> Cell:
    return Cell("observations", e.observation_id, anchor("observations", e.observation_id),
                f"shown for {e.request_id}", [_answer(e.observation)])


def build(record: LabRun) -> LabView:
    """Shape one run record for the lab template."""
    s = record.streams
    lines: list[Line] = []
    cells: dict[tuple[str, str], Cell] = {}
    placed: list[tuple[int, int, int, Cell]] = [
        *((e.seq, e.at_ms, 0, _request(e)) for e in s.requests),
        *((e.seq, e.at_ms, 0, _wait(e)) for e in record.waits),
        *((e.seq, e.at_ms, 1, _delivery(e)) for e in s.deliveries),
        *((e.seq, e.at_ms, 2, _effect(e)) for e in s.effects),
        *((e.seq, e.at_ms, 3, _observation(e)) for e in s.observations),
    ]
    for seq, at_ms, column, cell in sorted(placed, key=lambda p: (p[0], p[2])):
        cells[(cell.stream, cell.id)] = cell
        lines.append(Line(seq=seq, at_ms=at_ms, column=column, cell=cell))
    for entry in record.coverage:
        for activation in entry.activations:
            hit = cells.get(("requests", activation.request_id))
            if hit is not None:
                hit.faults.append(f"{entry.operator} {entry.fault} ({entry.id}): "
                                  f"{activation.note}")
        for suppression in entry.suppressions:
            hit = cells.get(("requests", suppression.request_id))
            if hit is not None:
                hit.faults.append(f"{entry.operator} {entry.fault} ({entry.id}) suppressed: "
                                  f"{suppression.reason}")
    violations = []
    for number, v in enumerate(record.gate.violations, start=1):
        view = ViolationView(rule=v.rule, kind=v.kind, message=v.message,
                             anchor=f"violation-{number}", refs=[])
        for ref in v.evidence:
            target = anchor(ref.stream, ref.id)
            view.refs.append((ref.stream, ref.id, target))
            cited = cells.get((ref.stream, ref.id))
            if cited is not None and (v.rule, view.anchor) not in cited.cited_by:
                cited.cited_by.append((v.rule, view.anchor))
        violations.append(view)
    probes = {c.id: c for c in record.gate.coverage}
    coverage = []
    for entry in record.coverage:
        probe = probes.get(entry.id)
        coverage.append({
            "entry": entry,
            "landed": probe.landed if probe else None,
            "evidence": probe.evidence if probe else "no probe reading in the gate",
            "anchors": [anchor("requests", r) for r in entry.matched],
        })
    counts: dict[str, int] = defaultdict(int)
    for line in lines:
        counts[line.cell.stream] += 1
    return LabView(
        record=record,
        fixture_note=FIXTURE_NOTE if record.agent.fixture else "",
        lines=lines,
        streams=STREAMS,
        violations=violations,
        coverage=coverage,
        counts=dict(counts),
        changes=changes(record),
        diagnostics=diagnose(record),
        usage=build_usage(record),
    )
