"""Two lab runs side by side (``sabot compare A B`` of two run records): a pure function
of the two records.

* the gate and execution of each, and how the gate moved (better, same, worse);
* violations added (broken in B, not in A) and removed, by rule;
* each fault entry's coverage in A and in B, with the entries that differ marked;
* committed effects counted by kind in each run (a duplicate ticket shows as
  ``ticket_created`` 2 against 1);
* the first request where the runs diverge: the first position where the tool or the
  arguments differ, or where one run has a request and the other has none.

B regresses against A (SPEC I142) when its gate is worse (the order is pass, then
inconclusive, then fail and error alike) or it breaks a rule A did not break.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import Field

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.lab.record import (
    Deliveries,
    Effects,
    ExitCode,
    LabRun,
    Outcome,
    RoutedCalls,
    ScenarioDigest,
    VirtualMs,
)

# How bad a gate is for a comparison: a higher rank is worse. fail and error rank alike:
# an error is no better than a failure, and a failure turned harness error is not a
# regression of the agent either (the comparison says so in its reasons).
GATE_RANK: dict[str, int] = {"pass": 0, "inconclusive": 1, "fail": 2, "error": 2}


class LabSide(FrozenModel):
    """One run as the comparison shows it."""

    name: str = Field(description="How the input was named (path, or id and source).")
    run_id: str = Field(description="The record's run id.")
    scenario: str = Field(description="The scenario's name.")
    scenario_digest: ScenarioDigest
    agent: str = Field(description="The agent.")
    fixture: bool = Field(
        False, description="The agent is a scripted controller: an acceptance fixture, not "
        "a measurement of any model.",
    )
    gate: Outcome
    exit_code: ExitCode
    execution: str = Field(description="How execution ended.")
    routed_calls: RoutedCalls
    deliveries: Deliveries
    effects: Effects
    virtual_ms: VirtualMs
    rules: list[str] = Field(description="Rules broken, in the record's order.")
    messages: dict[str, str] = Field(description="Each broken rule's message.")


class CoverageRow(FrozenModel):
    id: str = Field(description="Schedule entry id.")
    fault: str = Field(description="Fault kind.")
    a: str | None = Field(description="Status in A ('activated, landed', ...), None if absent.")
    b: str | None = Field(description="Status in B, None if absent.")
    differs: bool = Field(description="Whether A and B differ.")


class EffectCount(FrozenModel):
    kind: str = Field(description="Effect kind.")
    a: int = Field(description="How many A committed.")
    b: int = Field(description="How many B committed.")


class RequestAt(FrozenModel):
    id: str = Field(description="Request id.")
    tool: str = Field(description="Tool.")
    arguments: dict[str, Any] = Field(description="Arguments as given.")


class Divergence(FrozenModel):
    position: int = Field(description="1-based position of the request in each run.")
    a: RequestAt | None = Field(description="A's request there (None: A had stopped).")
    b: RequestAt | None = Field(description="B's request there (None: B had stopped).")
    what: str = Field(description="What differs, in words.")


class LabComparison(FrozenModel):
    """What ``sabot compare A B --json`` prints for two lab runs."""

    kind: Literal["lab"] = "lab"
    a: LabSide
    b: LabSide
    same_scenario: bool = Field(description="Whether both ran the same scenario (digest).")
    gate_change: Literal["better", "same", "worse"] = Field(description="B's gate against A's.")
    violations_added: list[str] = Field(description="Rules B broke that A did not.")
    violations_removed: list[str] = Field(description="Rules A broke that B did not.")
    coverage: list[CoverageRow] = Field(description="Each fault entry in A and in B.")
    effects: list[EffectCount] = Field(description="Committed effects by kind.")
    first_divergence: Divergence | None = Field(description="None: the same requests.")
    regressed: bool = Field(description="B is worse than A (exit 1).")
    reasons: list[str] = Field(description="Why it regressed or not, in words.")


def _side(record: LabRun, name: str) -> LabSide:
    m = record.measurement
    ex = record.execution
    return LabSide(
        name=name, run_id=record.run_id, scenario=record.scenario.name,
        scenario_digest=record.scenario_digest, agent=record.agent.name,
        fixture=record.agent.fixture, gate=record.gate.outcome, exit_code=record.gate.exit_code,
        execution=ex.status + (f": {ex.detail}" if ex.detail else ""),
        routed_calls=m.routed_calls, deliveries=m.deliveries, effects=m.effects,
        virtual_ms=m.virtual_ms, rules=[v.rule for v in record.gate.violations],
        messages={v.rule: v.message for v in reversed(record.gate.violations)},
    )


def _coverage(record: LabRun) -> dict[str, tuple[str, str]]:
    return {c.id: (c.fault, f"{c.status}, {'landed' if c.landed else 'not landed'}")
            for c in record.gate.coverage}


def first_divergence(a: LabRun, b: LabRun) -> Divergence | None:
    """The first position where the two runs' requests differ (tool or arguments)."""
    ra, rb = a.streams.requests, b.streams.requests
    for i in range(max(len(ra), len(rb))):
        x = ra[i] if i < len(ra) else None
        y = rb[i] if i < len(rb) else None
        if x is not None and y is not None and (x.tool, x.arguments) == (y.tool, y.arguments):
            continue
        at = [RequestAt(id=r.request_id, tool=r.tool, arguments=r.arguments) if r else None
              for r in (x, y)]
        if x is None or y is None:
            what = f"{'A' if x is None else 'B'} had no request {i + 1}: it had stopped"
        elif x.tool != y.tool:
            what = f"A asked {x.tool}, B asked {y.tool}"
        else:
            keys = sorted(k for k in set(x.arguments) | set(y.arguments)
                          if x.arguments.get(k) != y.arguments.get(k))
            what = f"{x.tool} with different {', '.join(keys)}"
        return Divergence(position=i + 1, a=at[0], b=at[1], what=what)
    return None


def compare_lab(a: LabRun, b: LabRun, *, a_name: str = "A", b_name: str = "B") -> (
        LabComparison):
    """Compare two lab run records (see the module's text)."""
    rules_a = [v.rule for v in a.gate.violations]
    rules_b = [v.rule for v in b.gate.violations]
    added = [r for r in dict.fromkeys(rules_b) if r not in rules_a]
    removed = [r for r in dict.fromkeys(rules_a) if r not in rules_b]
    rank_a, rank_b = GATE_RANK[a.gate.outcome], GATE_RANK[b.gate.outcome]
    change: Literal["better", "same", "worse"] = (
        "worse" if rank_b > rank_a else "better" if rank_b < rank_a else "same")
    ca, cb = _coverage(a), _coverage(b)
    coverage = [
        CoverageRow(id=i, fault=(ca.get(i) or cb[i])[0], a=ca[i][1] if i in ca else None,
                    b=cb[i][1] if i in cb else None,
                    differs=(ca.get(i) or ("", ""))[1] != (cb.get(i) or ("", ""))[1])
        for i in dict.fromkeys([*ca, *cb])
    ]
    ea = Counter(e.kind for e in a.streams.effects)
    eb = Counter(e.kind for e in b.streams.effects)
    effects = [EffectCount(kind=k, a=ea.get(k, 0), b=eb.get(k, 0))
               for k in sorted(set(ea) | set(eb))]
    reasons: list[str] = []
    if change == "worse":
        reasons.append(f"the gate got worse: {a.gate.outcome} -> {b.gate.outcome}")
    if added:
        reasons.append("B breaks rules A did not: " + ", ".join(added))
    if {a.gate.outcome, b.gate.outcome} == {"fail", "error"}:
        reasons.append(f"the gate moved {a.gate.outcome} -> {b.gate.outcome}: a harness "
                       "error is neither better nor worse than a failure")
    regressed = change == "worse" or bool(added)
    if not regressed:
        reasons.append("no regression: B's gate is " + (
            "better than" if change == "better" else "the same as") + " A's and B breaks no "
            "rule A did not" + (f" (A's {', '.join(removed)} no longer broken)"
                                if removed else ""))
    if a.scenario_digest != b.scenario_digest:
        reasons.append(f"the runs used different scenarios ({a.scenario.name} "
                       f"{a.scenario_digest[:12]}, {b.scenario.name} {b.scenario_digest[:12]})")
    return LabComparison(
        a=_side(a, a_name), b=_side(b, b_name),
        same_scenario=a.scenario_digest == b.scenario_digest, gate_change=change,
        violations_added=added, violations_removed=removed, coverage=coverage,
        effects=effects, first_divergence=first_divergence(a, b), regressed=regressed,
        reasons=reasons,
    )


__all__ = ["GATE_RANK", "LabComparison", "compare_lab", "first_divergence"]
