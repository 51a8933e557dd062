"""The lab's results as people read them in the terminal and in RESULTS.md: one run's
record, a replay's comparison, and a lab matrix's gates beside the Sabot funnel
(``results.lab_gates`` computes them)."""

from __future__ import annotations

from pydantic import Field
from rich.console import Console

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.lab.compare import LabComparison, RequestAt
from pytest_sabot.lab.record import LabRun
from pytest_sabot.lab.replay import ReplayReport
from pytest_sabot.report.html._lab_usage import SCRIPTED, scripted
from pytest_sabot.report.terminal import Column, print_lines, print_table
from pytest_sabot.results.lab_gates import OUTCOMES, GateRate, LabGates

FIXTURE_NOTE = "scripted controller: an acceptance fixture, not a measurement of any model"


def _usage_words(record: LabRun) -> str:
    """What the run observed of a model provider, in words: a scripted controller calls
    none; an agent whose calls were not observed has its usage said unknown."""
    usage = record.measurement.provider_usage
    if scripted(record):
        return SCRIPTED
    if usage.source == "unobserved":
        return "provider usage not observed (model calls and cost unknown)"
    return f"provider usage {usage.model_calls} calls, cost {usage.cost_usd}"


def run_text(record: LabRun, where: str | None = None) -> str:
    gate, m = record.gate, record.measurement
    lines = [
        f"run {record.run_id}: gate {gate.outcome.upper()} (exit {gate.exit_code})",
        f"  agent {record.agent.name}" + (f" ({FIXTURE_NOTE})" if record.agent.fixture else ""),
        f"  execution {record.execution.status}"
        + (f": {record.execution.detail}" if record.execution.detail else ""),
        f"  {m.routed_calls} calls, {m.deliveries} deliveries, {m.effects} effects, "
        f"{m.virtual_ms} virtual ms, {record.timings.real_ms:.1f} real ms; "
        + _usage_words(record),
    ]
    proc = record.process
    if proc is not None:
        code = proc.signal or (f"exit {proc.exit_code}" if proc.exit_code is not None else "?")
        lines.append(f"  agent process ({proc.target}): {proc.ended}, {code}, "
                     f"{proc.requests} requests served"
                     + (f", {len(proc.late)} late requests refused" if proc.late else "")
                     + f"; output in {proc.log_file}")
    for check in gate.coverage:
        lines.append(f"  fault {check.id} ({check.fault}, "
                     f"{'required' if check.required else 'optional'}): {check.status}, "
                     f"{'landed' if check.landed else 'not landed'} - {check.evidence}")
    for v in gate.violations:
        refs = " ".join(e.id for e in v.evidence)
        lines.append(f"  {v.rule} ({v.kind}): {v.message}" + (f" [{refs}]" if refs else ""))
    lines += [f"  - {reason}" for reason in gate.reasons]
    if where:
        lines.append(f"  record: {where}")
    return "\n".join(lines)


def replay_text(report: ReplayReport) -> str:
    lines = [f"reproduction: {report.reproduction}",
             f"original_gate: {report.original_gate}",
             f"replayed_gate: {report.replayed_gate}",
             f"actions: {report.actions}"]
    diff = report.first_difference
    if diff is not None:
        lines.append(f"first_difference: {diff.where} {diff.field}: recorded "
                     f"{diff.recorded!r}, replayed {diff.replayed!r}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- lab matrix gates


def _pct(rate: GateRate) -> str:
    if rate.rate is None or rate.ci_low is None or rate.ci_high is None:
        return "n/a"
    return f"{rate.rate:.1%} [{rate.ci_low:.1%}, {rate.ci_high:.1%}]"


def _funnel_counts(rate: GateRate) -> str:
    """The funnel of the group's cells: detection tiers (or exclusion codes) counted."""
    counts: dict[str, int] = {}
    for cell in rate.cells:
        head = cell.funnel.split(" ")[0] if cell.funnel else "none"
        counts[head] = counts.get(head, 0) + 1
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))


# The gate outcomes' short names in the terminal (RESULTS.md spells them out).
OUTCOME_WORDS: dict[str, str] = {
    "pass": "pass", "fail": "fail", "error": "err", "inconclusive": "inc", "no record": "none",
}


def _outcomes(rate: GateRate) -> str:
    """The group's gate outcomes that occur, each with its count ('pass 5 inc 1'): short
    enough to stay at 80 columns, where a hung tool's liveness outcome (inc) must show."""
    counts = [(OUTCOME_WORDS[o], rate.outcomes.get(o, 0)) for o in OUTCOMES]
    return " ".join(f"{word} {n}" for word, n in counts if n) or "-"


GATE_TITLE = (
    "lab gate beside the Sabot funnel, per row and fault (gate pass rate = passed / every "
    "counted cell; outcomes: err = error, inc = inconclusive, none = no record):"
)


def gate_columns() -> tuple[Column[GateRate], ...]:
    """The terminal table of a lab matrix: per row and fault, the lab gate beside the
    Sabot funnel (fitted to the terminal by ``report.terminal.print_table``)."""
    return (
        Column("row", lambda r: r.row, 1),
        Column("fault", lambda r: r.fault, 1),
        Column("gate pass [95% CI]", _pct, 1),
        Column("n", lambda r: str(r.runs), 3, "right"),  # the outcomes' counts sum to it
        Column("outcomes", _outcomes, 2),
        Column("funnel", _funnel_counts, 4),
    )


def print_gates(out: Console, gates: LabGates) -> None:
    """The lab matrix's gates under their title, fitted to the console."""
    print_lines(out, [GATE_TITLE])
    print_table(out, gate_columns(), [*gates.by_row, *gates.by_fault],
                "RESULTS.md has every column")


def gate_markdown(gates: LabGates) -> list[str]:
    """RESULTS.md's lab section: the rates per row and fault, then every cell."""
    out = ["", "## Lab gate beside the Sabot funnel", "", gates.note + ".", "",
           "| row | fault | gate pass [95% CI] | passed / runs | pass | fail | error | "
           "inconclusive | no record | funnel |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for rate in [*gates.by_row, *gates.by_fault]:
        counts = " | ".join(str(rate.outcomes.get(o, 0)) for o in OUTCOMES)
        out.append(f"| {rate.row} | {rate.fault} | {_pct(rate)} | {rate.passed} / {rate.runs} "
                   f"| {counts} | {_funnel_counts(rate)} |")
    out += ["", "| cell | lab gate | rules broken | execution | Sabot funnel |",
            "|---|---|---|---|---|"]
    for rate in gates.by_row:
        for cell in rate.cells:
            out.append(f"| `{cell.cell_id}` | {cell.gate} | "
                       f"{', '.join(cell.rules_broken) or '-'} | {cell.execution or '-'} | "
                       f"{cell.funnel} |")
    return out


# --------------------------------------------------------------------------- inspect


class LabEvent(FrozenModel):
    """One line of a lab run's timeline (``sabot inspect RUN``)."""

    seq: int = Field(description="The event's seq (faults: their request's; violations: "
                     "their last cited event's, or after the last event for an absence).")
    at_ms: int = Field(description="Virtual time.")
    stream: str = Field(description="requests, deliveries, effects, observations, waits, "
                        "fault or violation.")
    id: str = Field(description="The event's id ('r3', 'd4', ...), the fault entry's or "
                    "the rule's.")
    what: str = Field(description="What it says, in words.")


class LabTimeline(FrozenModel):
    """What ``sabot inspect RUN --json`` prints for a lab run."""

    run_id: str
    agent: str
    gate: str
    exit_code: int
    execution: str
    events: list[LabEvent]
    reasons: list[str]


_ORDER = {"requests": 0, "waits": 0, "fault": 1, "deliveries": 2, "effects": 3,
          "observations": 4, "violation": 5}


def _short(value: object, limit: int = 70) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True,
                                                           ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def lab_timeline(record: LabRun) -> LabTimeline:
    """The run's requests, deliveries, effects, observations, waits, faults and violations
    in the order they happened (a pure function of the record)."""
    s = record.streams
    events: list[LabEvent] = []
    for r in s.requests:
        events.append(LabEvent(seq=r.seq, at_ms=r.at_ms, stream="requests", id=r.request_id,
                               what=f"{r.tool} {_short(r.arguments)}"))
    for w in record.waits:
        events.append(LabEvent(seq=w.seq, at_ms=w.at_ms, stream="waits", id=w.wait_id,
                               what=f"wait {w.ms} ms"))
    for d in s.deliveries:
        error = d.response.error
        said = "ok" if d.response.ok else f"error {error.code if error else ''}"
        events.append(LabEvent(
            seq=d.seq, at_ms=d.at_ms, stream="deliveries", id=d.delivery_id,
            what=f"{d.tool} for {d.request_id} (copy {d.copy_number}, {d.view}"
            + (", from the idempotency store" if d.replayed_operation else "") + f"): {said}"))
    for e in s.effects:
        versions = ("" if e.after_version is None else f" v{e.after_version}"
                    if e.before_version is None else f" v{e.before_version}->v{e.after_version}")
        events.append(LabEvent(
            seq=e.seq, at_ms=e.at_ms, stream="effects", id=e.effect_id,
            what=f"{e.actor} {e.kind} {e.entity}{versions}"
            + (f" key {e.operation_key}" if e.operation_key else "")))
    for o in s.observations:
        shown = o.observation
        said = ("ok " + _short(shown.result, 50) if shown.ok
                else f"error {shown.error.code if shown.error else ''}")
        events.append(LabEvent(seq=o.seq, at_ms=o.at_ms, stream="observations",
                               id=o.observation_id, what=f"shown for {o.request_id}: {said}"))
    requests = {r.request_id: r for r in s.requests}
    for entry in record.coverage:
        # where the fault acted, then where it matched but could not act
        marks = [(a.request_id, "", a.note) for a in entry.activations]
        marks += [(x.request_id, " suppressed", x.reason) for x in entry.suppressions]
        for request_id, suppressed, why in marks:
            at = requests.get(request_id)
            if at is not None:
                events.append(LabEvent(seq=at.seq, at_ms=at.at_ms, stream="fault", id=entry.id,
                                       what=f"{entry.operator} {entry.fault}{suppressed} on "
                                       f"{request_id}: {why}"))
    last = max((e.seq for e in events), default=0)
    for v in record.gate.violations:
        seq = max((r.seq for r in v.evidence), default=last + 1)
        at_ms = next((e.at_ms for e in events if e.seq == seq), record.measurement.virtual_ms)
        cited = " ".join(r.id for r in v.evidence)
        events.append(LabEvent(seq=seq, at_ms=at_ms, stream="violation", id=v.rule,
                               what=f"{v.kind}: {v.message}" + (f" [{cited}]" if cited else "")))
    events.sort(key=lambda e: (e.seq, _ORDER.get(e.stream, 9)))
    ex = record.execution
    return LabTimeline(
        run_id=record.run_id, agent=record.agent.name, gate=record.gate.outcome,
        exit_code=record.gate.exit_code,
        execution=ex.status + (f": {ex.detail}" if ex.detail else ""), events=events,
        reasons=list(record.gate.reasons))


def print_lab_timeline(out: Console, t: LabTimeline) -> None:
    """The timeline as a table fitted to the console, then the gate."""
    columns: tuple[Column[LabEvent], ...] = (
        Column("seq", lambda e: str(e.seq), 1, "right"),
        Column("at ms", lambda e: str(e.at_ms), 2, "right"),
        Column("stream", lambda e: e.stream, 1),
        Column("id", lambda e: e.id, 1),
        Column("what", lambda e: e.what, 1),
    )
    print_lines(out, [f"lab run {t.run_id} ({t.agent}): {len(t.events)} events"])
    print_table(out, columns, t.events, "sabot inspect --json has every field")
    print_lines(out, [f"execution: {t.execution}",
                      f"gate: {t.gate} (exit {t.exit_code})",
                      *(f"  - {r}" for r in t.reasons)])


# --------------------------------------------------------------------------- compare


def comparison_text(c: LabComparison) -> str:
    """Two lab runs side by side, as ``sabot compare`` prints them."""
    def row(label: str, a: object, b: object) -> str:
        return f"  {label:<14} {a!s:<34} {b!s}"

    lines = [f"lab runs compared (A -> B): {c.a.scenario}"
             + ("" if c.same_scenario else f" / {c.b.scenario} (different scenarios)"),
             row("", "A: " + c.a.name, "B: " + c.b.name),
             row("agent", c.a.agent, c.b.agent),
             row("gate", f"{c.a.gate} (exit {c.a.exit_code})", f"{c.b.gate} (exit {c.b.exit_code})"
                 + f"  [{c.gate_change}]"),
             row("execution", c.a.execution, c.b.execution),
             row("routed calls", c.a.routed_calls, c.b.routed_calls),
             row("deliveries", c.a.deliveries, c.b.deliveries),
             row("effects", c.a.effects, c.b.effects),
             row("virtual ms", c.a.virtual_ms, c.b.virtual_ms),
             row("rules broken", ",".join(c.a.rules) or "-", ",".join(c.b.rules) or "-")]
    lines.append("violations added in B: " + ("none" if not c.violations_added else ""))
    lines += [f"  + {r}: {c.b.messages.get(r, '')}" for r in c.violations_added]
    lines.append("violations removed in B: " + ("none" if not c.violations_removed else ""))
    lines += [f"  - {r}: {c.a.messages.get(r, '')}" for r in c.violations_removed]
    lines.append("committed effects (A -> B):")
    lines += [f"  {e.kind}: {e.a} -> {e.b}" + ("" if e.a == e.b else "  (differs)")
              for e in c.effects] or ["  none in either run"]
    lines.append("fault coverage (A -> B):")
    lines += [f"  {r.id} ({r.fault}): {r.a or 'absent'} -> {r.b or 'absent'}"
              + ("  (differs)" if r.differs else "") for r in c.coverage] or [
        "  no fault scheduled"]
    d = c.first_divergence
    if d is None:
        lines.append("first divergence: none (the same requests in the same order)")
    else:
        def said(r: RequestAt | None) -> str:
            return "no request" if r is None else f"{r.id} {r.tool} {_short(r.arguments, 60)}"

        lines += [f"first divergence: request {d.position}: {d.what}",
                  f"  A: {said(d.a)}", f"  B: {said(d.b)}"]
    lines.append(("REGRESSED: " if c.regressed else "") + "; ".join(c.reasons))
    scripted = [side for side, s in (("A", c.a), ("B", c.b)) if s.fixture]
    if scripted:
        lines.append(f"{' and '.join(scripted)}: {FIXTURE_NOTE}")
    return "\n".join(lines)
