"""Diagnostics of a lab run: what the record says went wrong, why the gate is what it is,
and what the run cannot tell. A pure function of the record (nothing is judged again:
the violations, the coverage and the execution are the record's own).

Three families, in the order a reader needs them:

* ``failure``: each violation, told as the events that make it (request, delivery,
  effect, what the agent was shown), with what usually causes it;
* ``incomplete``: execution that did not complete and required faults that did not
  activate and land (why the gate cannot pass);
* ``limit``: what the run does not measure (provider usage not observed, fixture
  controllers, a suppressed optional fault, the model of the world).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_sabot.lab.evidence import EvidenceRef, Streams
from pytest_sabot.lab.record import LabRun

Family = Literal["failure", "incomplete", "limit"]

# What usually produces each rule's violation (docs/LAB.md, "Rules"), in a line.
CAUSES: dict[str, str] = {
    "LS1": "a retry of a creation whose answer was lost: the first ticket was committed, "
           "the retry carried a new operation key (or none), so the server made a second one. "
           "Reuse the operation key of the first attempt, or read back before retrying.",
    "LS2": "a notification to someone other than the requesting customer.",
    "LS3": "an assignment while the ticket's approval was pending: wait for the approval.",
    "LS4": "a notification before the ticket was assigned as requested: assign (and read "
           "back) first.",
    "LS5": "the agent changed a ticket of another request that existed before the run.",
    "LS6": "an effect the task does not authorize (another customer, request or assignee).",
    "LC1": "the number of the request's tickets at the end is not the expected one.",
    "LC2": "the number of notifications to the customer about the request's ticket is not "
           "the expected one.",
    "LC3": "the request's ticket is not assigned to the requested assignee at the end.",
}


@dataclass
class Diagnostic:
    family: Family
    title: str
    lines: list[str]
    refs: list[tuple[str, str]] = field(default_factory=list)  # (label, anchor)


def anchor(stream: str, event_id: str) -> str:
    return f"ev-{stream}-{event_id}"


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(streams: Streams, ref: EvidenceRef, waits: dict[str, int]) -> str:
    """One event in words, for a diagnostic."""
    if ref.stream == "requests":
        r = streams.request(ref.id)
        return f"{ref.id}: the agent asked {r.tool} {_short(r.arguments)}" if r else ref.id
    if ref.stream == "deliveries":
        d = next((x for x in streams.deliveries if x.delivery_id == ref.id), None)
        if d is None:
            return ref.id
        return (f"{ref.id}: {d.tool} reached the world (copy {d.copy_number} of "
                f"{d.request_id}, {d.view})")
    if ref.stream == "effects":
        e = next((x for x in streams.effects if x.effect_id == ref.id), None)
        if e is None:
            return ref.id
        key = f", operation key {e.operation_key}" if e.operation_key else ", no operation key"
        return f"{ref.id}: {e.actor} committed {e.kind} of {e.entity}{key}"
    if ref.stream == "observations":
        o = next((x for x in streams.observations if x.observation_id == ref.id), None)
        if o is None:
            return ref.id
        shown = o.observation
        said = "ok" if shown.ok else f"error {shown.error.code if shown.error else ''}".strip()
        return f"{ref.id}: the agent was shown {said} for {o.request_id}"
    return f"{ref.id}: a wait of {waits.get(ref.id, 0)} ms"


def diagnose(record: LabRun) -> list[Diagnostic]:
    """The run's diagnostics (see the module's text)."""
    out: list[Diagnostic] = []
    waits = {w.wait_id: w.ms for w in record.waits}
    for v in record.gate.violations:
        lines = [describe(record.streams, r, waits) for r in v.evidence]
        if not v.evidence:
            lines.append("no event: the violation is an absence in the final state")
        cause = CAUSES.get(v.rule)
        if cause:
            lines.append("usually: " + cause)
        out.append(Diagnostic("failure", f"{v.rule} ({v.kind}): {v.message}", lines,
                              [(r.id, anchor(r.stream, r.id)) for r in v.evidence]))
    ex = record.execution
    if ex.status != "completed":
        lines = [f"execution ended {ex.status}" + (f": {ex.detail}" if ex.detail else "")]
        if ex.status == "harness_error":
            lines.append("the harness failed: the evidence cannot be trusted either way (gate "
                         "error)")
        else:
            lines.append("completion rules were not judged; safety rules were (a safety "
                         "violation still fails the run)")
        if ex.refused is not None:
            r = ex.refused
            lines.append(f"refused at the limit: {r.kind} "
                         + (f"{r.tool} {_short(r.arguments)}" if r.kind == "request"
                            else f"{r.ms} ms"))
        out.append(Diagnostic("incomplete", "execution did not complete", lines))
    probes = {c.id: c for c in record.gate.coverage}
    for entry in record.coverage:
        probe = probes.get(entry.id)
        landed = probe is not None and probe.landed
        if entry.status == "activated" and landed:
            continue
        lines = []
        if entry.status == "planned":
            lines.append(entry.note or f"never matched: no request to {entry.tool} met its "
                         "condition")
        elif entry.status == "matched":
            lines.append("matched " + ", ".join(entry.matched) + " but never acted")
        for s in entry.suppressions:
            lines.append(f"suppressed at {s.request_id}: {s.reason}")
        if entry.status == "activated" and not landed:
            lines.append("activated, but the landing probe did not find it in the evidence: "
                         + (probe.evidence if probe else "no probe reading"))
        family: Family = "incomplete" if entry.required else "limit"
        lines.append("required: the gate cannot pass without it" if entry.required
                     else "optional: the gate does not need it")
        refs = [(r, anchor("requests", r)) for r in entry.matched]
        out.append(Diagnostic(family, f"fault {entry.id} ({entry.fault} on {entry.tool}): "
                              f"{entry.status}", lines, refs))
    usage = record.measurement.provider_usage
    if usage.source == "unobserved":
        out.append(Diagnostic("limit", "provider usage unknown", [
            "model calls, tokens and cost were not observed by the lab: they stay "
            "'unknown', never zero"]))
    if record.agent.fixture:
        out.append(Diagnostic("limit", "acceptance fixture", [
            f"{record.agent.name} is a scripted controller: its outcome is a fixture of the "
            "engine, not a measurement of any model"]))
    out.append(Diagnostic("limit", "what the world models", [
        "one sequential helpdesk workflow, simulated: no real system is contacted, no "
        "distributed race or production traffic is modeled (docs/LAB.md, 'What is not "
        "modeled')"]))
    return out


__all__ = ["CAUSES", "Diagnostic", "describe", "diagnose"]
