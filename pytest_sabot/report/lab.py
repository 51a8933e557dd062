"""The lab's results as people read them in the terminal and in RESULTS.md: one run's
record, a replay's comparison, and a lab matrix's gates beside the Sabot funnel
(``results.lab_gates`` computes them)."""

from __future__ import annotations

from rich.console import Console

from pytest_sabot.lab.record import LabRun
from pytest_sabot.lab.replay import ReplayReport
from pytest_sabot.report.terminal import Column, print_lines, print_table
from pytest_sabot.results.lab_gates import OUTCOMES, GateRate, LabGates

FIXTURE_NOTE = "scripted controller: an acceptance fixture, not a measurement of any model"


def run_text(record: LabRun, where: str | None = None) -> str:
    gate, m = record.gate, record.measurement
    lines = [
        f"run {record.run_id}: gate {gate.outcome.upper()} (exit {gate.exit_code})",
        f"  agent {record.agent.name}" + (f" ({FIXTURE_NOTE})" if record.agent.fixture else ""),
        f"  execution {record.execution.status}"
        + (f": {record.execution.detail}" if record.execution.detail else ""),
        f"  {m.routed_calls} calls, {m.deliveries} deliveries, {m.effects} effects, "
        f"{m.virtual_ms} virtual ms, {record.timings.real_ms:.1f} real ms; provider usage "
        f"{m.provider_usage.model_calls} calls, cost {m.provider_usage.cost_usd}",
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


def _raw(rate: GateRate) -> str:
    return " ".join(f"{rate.outcomes.get(o, 0)}" for o in OUTCOMES)


GATE_TITLE = (
    "lab gate beside the Sabot funnel, per row and fault (gate pass rate = passed / every "
    "counted cell):"
)


def gate_columns() -> tuple[Column[GateRate], ...]:
    """The terminal table of a lab matrix: per row and fault, the lab gate beside the
    Sabot funnel (fitted to the terminal by ``report.terminal.print_table``)."""
    return (
        Column("row", lambda r: r.row, 1),
        Column("fault", lambda r: r.fault, 1),
        Column("gate pass [95% CI]", _pct, 1),
        Column("n", lambda r: str(r.runs), 2, "right"),
        Column("pass fail err inc none", _raw, 3),
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
