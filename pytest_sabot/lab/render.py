"""Plain-text summaries of lab results for the terminal."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_sabot.lab.demo import DemoRow
from pytest_sabot.lab.record import LabRun
from pytest_sabot.lab.replay import ReplayReport

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


def demo_text(rows: Sequence[DemoRow]) -> str:
    lines = ["lab demo (scripted controllers: acceptance fixtures, not measurements of any "
             "model)"]
    for row in rows:
        mark = "ok" if row.ok else "NOT AS DECLARED"
        rules = ",".join(row.rules) or "-"
        lines.append(f"  {row.agent:<18} declared {row.declared:<5} got {row.gate:<12} "
                     f"violations {rules:<12} {mark}  ({row.why})")
    ok = all(r.ok for r in rows)
    lines.append("every declared gate produced" if ok else "a declared gate was not produced")
    return "\n".join(lines)
