"""O7..O11 as Sabot operators on T6 cells: each is armed from its fault schedule entry,
acts at the transaction boundary of the cell's lab session through the lab bridge's seams,
records its ``injection`` in the Sabot trace the first time it acts, and reports a landing
probe read from the lab's own coverage check (never from the trace alone)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.operators import lab_operator_ids
from pytest_sabot.core.paths import standard_root
from pytest_sabot.core.trace_io import TraceWriter
from pytest_sabot.harness.lab_bridge import LabSeams, arm_lab_operator, lab_scenario
from pytest_sabot.harness.lab_prompts import worker_messages
from pytest_sabot.lab.catalog import build_catalog
from pytest_sabot.lab.engine import LabSession
from pytest_sabot.lab.record import AgentInfo
from pytest_sabot.lab.scenario import Expectations
from pytest_sabot.matrix.task_views import load_private, load_public
from pytest_sabot.operators import arm
from pytest_sabot.sim.procedures import t6
from pytest_sabot.sim.procedures.types import FinalAnswer
from pytest_sabot.sim.request import ToolExchange
from pytest_sabot.sim.sections import gather

FAULT_OF = {"O7": "timeout_before_commit", "O8": "timeout_after_commit",
            "O9": "duplicate_delivery", "O10": "rate_limit", "O11": "stale_read"}


def _cell(operator: str | None) -> Cell:
    return Cell(wave=102, framework="langgraph", config="default", operator=operator,
                task="T6", seed=11)


def _run(tmp_path: Path, operator: str | None, recovery: t6.Recovery = "read_back",
         calls: int = 40) -> tuple[Any, TraceWriter, Any]:
    """One worker pass of the T6 procedure through the bridge's seams; (operator, trace,
    lab record)."""
    root = standard_root()
    view, private = load_public("T6", root, "v0.2"), load_private("T6", root)
    cell = _cell(operator)
    scenario = lab_scenario(cell, view, private)
    session = LabSession(scenario.model_copy(update={"expect": Expectations()}), source="t")
    op = arm_lab_operator(cell, private)
    trace = TraceWriter(tmp_path / (operator or "baseline"))
    seams = LabSeams(trace, session, op)
    assert view.lab is not None
    catalog = build_catalog(view.lab.contracts, list(view.lab.capabilities))
    prompt = worker_messages(view, catalog, 0, "")
    sections = gather([prompt.system, prompt.user])
    history: list[ToolExchange] = []
    output = ""
    for _ in range(calls):
        step = t6.worker_step(sections, history, weak=False, recovery=recovery)
        if isinstance(step, FinalAnswer):
            output = step.text
            break
        shown = seams.invoke(step.tool, step.arguments)
        history.append(ToolExchange(step.tool, step.arguments, shown))
    trace.emit("model_call", "worker", output, call_index=0, model_requested="m",
               model_served="m")
    record = session.finish(AgentInfo(name="t", kind="framework", fixture=True),
                            output=output, judged_as=scenario)
    if op is not None:
        op.record_check(next((c for c in record.gate.coverage if c.id == op.entry.id), None))
    return op, trace, record


def test_L_lab_operators_arm_only_through_their_fault_entry() -> None:
    private = load_private("T6", standard_root())
    assert set(FAULT_OF) <= set(lab_operator_ids())
    for op_id, fault in FAULT_OF.items():
        op = arm_lab_operator(_cell(op_id), private)
        assert op is not None and op.id == op_id and op.entry.fault == fault
        assert op.fault.kind == fault and op.fault.operator == op_id
        assert op.fault.intercept.__module__.startswith(
            f"pytest_sabot.lab.faults.{op_id.lower()}_")
    with pytest.raises(ValueError, match="lab operator"):
        arm("O8", private.operator("O8"))


@pytest.mark.parametrize("operator", sorted(FAULT_OF))
def test_L_each_lab_operator_lands_on_a_T6_cell(operator: str, tmp_path: Path) -> None:
    op, trace, record = _run(tmp_path, operator)
    injections = [e for e in trace.events() if e.kind == "injection"]
    assert len(injections) == 1 and injections[0].data.operator == operator
    assert injections[0].data.seam == "transaction"
    assert injections[0].data.target.startswith(f"tool:{op.entry.tool}#")
    probe = op.probe(trace.events())
    assert probe.landed and probe.consumed, probe.evidence
    assert f"{FAULT_OF[operator]} activated" in probe.evidence
    kinds = {e.kind for e in trace.events()}
    assert not kinds & {"delivery", "effect"}  # the lab's streams stay in run.json
    assert record.gate.coverage[0].status == "activated"


def test_L_a_lab_fault_that_never_fires_is_unverified(tmp_path: Path) -> None:
    # O10 plants on assign_ticket; a worker that gives up at the first call never gets there
    op, trace, record = _run(tmp_path, "O10", calls=1)
    assert not [e for e in trace.events() if e.kind == "injection"]
    probe = op.probe(trace.events())
    assert not probe.landed
    assert "not_activated" in probe.evidence or "planned" in probe.evidence, probe.evidence
    assert record.gate.outcome == "fail"  # observed completion failures take precedence


def test_L_the_trace_shows_exactly_what_the_lab_observed(tmp_path: Path) -> None:
    """O8: the trace's tool results are the lab's observations verbatim, the timeout
    included; the committed ticket behind it appears in the lab record only."""
    _, trace, record = _run(tmp_path, "O8")
    results = [e.text for e in trace.events() if e.kind == "tool_result"]
    observed = [o.observation.to_text() for o in record.streams.observations]
    assert results == observed
    assert json.loads(results[1]) == {"ok": False, "error": {
        "code": "timeout", "message": "the request timed out; its outcome is unknown"}}
