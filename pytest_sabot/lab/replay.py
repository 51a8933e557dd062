"""Replay: re-execute a recorded run's actions and check that the engine reproduces it.

The recorded requests and waits are issued again, in their recorded order, against a
fresh world built from the recorded scenario; no model and no agent logic is involved
(the replayed actions do not react to what they are shown). The fresh run is compared
with the record event by event (all four streams and the waits, by ``seq``), then the
final world, the fault coverage, how execution ended and the gate. The report says
``verified`` or ``diverged`` with the first difference, and always carries the original
gate: a replay reproduces a failed run as failed and never turns it into a pass.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.lab.agent import AgentContext, AgentResult, AgentStopped, LabAgent
from pytest_sabot.lab.engine import execute
from pytest_sabot.lab.record import LabRun
from pytest_sabot.lab.scenario_load import scenario_digest
from pytest_sabot.lab.vocabulary import GateOutcome


class Difference(FrozenModel):
    """The first place a replay differs from its record."""

    where: str = Field(description="'seq 7 (effects e2)', 'world_final', 'gate', ...")
    field: str = Field(description="Dotted path of the first differing value ('' = whole).")
    recorded: Any = Field(description="The value in the record.")
    replayed: Any = Field(description="The value the replay produced.")


class ReplayReport(FrozenModel):
    """The outcome of replaying one run record."""

    format_version: Literal[1] = Field(1, description="Replay report version.")
    run_id: str = Field(description="The replayed run.")
    reproduction: Literal["verified", "diverged"] = Field(
        description="Whether the engine reproduced the record exactly."
    )
    first_difference: Difference | None = Field(
        None, description="Where it first diverged (None when verified)."
    )
    original_gate: GateOutcome = Field(description="The gate the record carries.")
    replayed_gate: GateOutcome = Field(description="The gate of the re-executed run.")
    actions: int = Field(description="Requests and waits re-executed.")


def _actions(record: LabRun) -> list[tuple[str, Any, Any]]:
    steps: list[tuple[int, tuple[str, Any, Any]]] = [
        (r.seq, ("request", r.tool, r.arguments)) for r in record.streams.requests
    ]
    steps += [(w.seq, ("wait", w.ms, None)) for w in record.waits]
    return [step for _, step in sorted(steps, key=lambda s: s[0])]


def _recorded_error(detail: str) -> Exception:
    match = re.fullmatch(r"([A-Za-z_]\w*): (.*)", detail, flags=re.DOTALL)
    if match is None:
        return RuntimeError(detail)
    kind: type[Exception] = type(match.group(1), (Exception,), {})
    return kind(match.group(2))


def replay_agent(record: LabRun) -> LabAgent:
    """An agent that repeats the record's actions and ends as the recorded agent did."""
    steps = _actions(record)
    execution = record.execution

    def run(context: AgentContext) -> AgentResult:
        for kind, a, b in steps:
            if kind == "request":
                context.call_tool(a, b)
            else:
                context.sleep(a)
        refused = execution.refused
        if refused is not None:
            if refused.kind == "request":
                context.call_tool(refused.tool or "", refused.arguments or {})
            else:
                context.sleep(refused.ms or 0)
        if execution.status == "agent_error":
            raise _recorded_error(execution.detail)
        if execution.status == "cancelled" or (
                execution.status == "deadline_exceeded" and refused is None):
            # stopped from outside (an interrupt, a supervisor's real-time deadline, a
            # client that went away): end the same way without a real interrupt
            raise AgentStopped(execution.status, execution.detail)
        return AgentResult(execution.output)

    return LabAgent(record.agent.name, record.agent.kind, run, fixture=record.agent.fixture)


def _first_path(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any] | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            found = _first_path(a.get(key), b.get(key), f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_path(x, y, f"{path}.{i}" if path else str(i))
            if found is not None:
                return found
        return None
    return None if a == b else (path, a, b)


def _events(record: LabRun) -> dict[int, tuple[str, dict[str, Any]]]:
    out: dict[int, tuple[str, dict[str, Any]]] = {}
    s = record.streams
    for name, events, key in (("requests", s.requests, "request_id"),
                              ("deliveries", s.deliveries, "delivery_id"),
                              ("effects", s.effects, "effect_id"),
                              ("observations", s.observations, "observation_id"),
                              ("waits", record.waits, "wait_id")):
        for event in events:
            dump = event.model_dump(mode="json")
            out.setdefault(event.seq, (f"seq {event.seq} ({name} {dump[key]})", dump))
    return out


def first_difference(recorded: LabRun, replayed: LabRun) -> Difference | None:
    """The first difference between a record and its replay, in history order."""
    if recorded.scenario_digest != scenario_digest(recorded.scenario):
        return Difference(where="scenario_digest", field="", recorded=recorded.scenario_digest,
                          replayed=scenario_digest(recorded.scenario))
    old, new = _events(recorded), _events(replayed)
    for seq in sorted(set(old) | set(new)):
        a, b = old.get(seq), new.get(seq)
        if a is None or b is None:
            where = (a or b or ("", {}))[0]
            return Difference(where=where, field="", recorded=a and a[1], replayed=b and b[1])
        found = _first_path(a[1], b[1]) if a[0] == b[0] else ("", a[1], b[1])
        if found is not None:
            return Difference(where=a[0], field=found[0], recorded=found[1], replayed=found[2])
    for part in ("world_final", "coverage", "execution", "gate"):
        found = _first_path(
            _dump(getattr(recorded, part)), _dump(getattr(replayed, part))
        )
        if found is not None:
            return Difference(where=part, field=found[0], recorded=found[1], replayed=found[2])
    return None


def _dump(value: Any) -> Any:
    if isinstance(value, list):
        return [v.model_dump(mode="json") for v in value]
    return value.model_dump(mode="json")


def replay_run(record: LabRun) -> ReplayReport:
    """Re-execute a recorded run and report whether it reproduces."""
    fresh, _ = execute(record.scenario, replay_agent(record), source=record.scenario_source)
    fresh = fresh.model_copy(update={"measurement": fresh.measurement.model_copy(
        update={"provider_usage": record.measurement.provider_usage})})
    diff = first_difference(record, fresh)
    return ReplayReport(
        run_id=record.run_id,
        reproduction="verified" if diff is None else "diverged",
        first_difference=diff,
        original_gate=record.gate.outcome,
        replayed_gate=fresh.gate.outcome,
        actions=len(record.streams.requests) + len(record.waits),
    )
