"""O12, the hung tool: a call the fault holds is never delivered and never answered. In the
lab's own engine (virtual time) the held call runs into the run's deadline; through the
lab bridge a framework pipeline's thread waits on it in real time until the matrix's hang
bound, the cell's deadline (SPEC I131); the embedded model's reading of a lookup that
timed out (SPEC I132); and the hung-tool matrix registered apart from every other."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from lab_helpers import run, scenario

from pytest_sabot.core.models.cells import Cell, WaveSpec
from pytest_sabot.core.models.trace import Trace
from pytest_sabot.core.operators import declaration, lab_operator_ids
from pytest_sabot.core.paths import standard_root
from pytest_sabot.core.trace_io import TraceWriter, read_trace
from pytest_sabot.harness.lab_bridge import LabSeams, arm_lab_operator, lab_scenario
from pytest_sabot.harness.lab_prompts import worker_messages
from pytest_sabot.lab import AgentContext
from pytest_sabot.lab.agent import CallHeld
from pytest_sabot.lab.catalog import build_catalog
from pytest_sabot.lab.engine import LabSession
from pytest_sabot.lab.evidence import ObservationEvent
from pytest_sabot.lab.faults import FAULTS
from pytest_sabot.lab.observation import Observation
from pytest_sabot.lab.record import AgentInfo
from pytest_sabot.lab.replay import replay_run
from pytest_sabot.lab.scenario import Expectations
from pytest_sabot.matrix.cells import load_wave
from pytest_sabot.matrix.standard import load_standard
from pytest_sabot.matrix.task_views import load_private, load_public
from pytest_sabot.scoring.exclusions import run_error_reason
from pytest_sabot.sim.procedures import t6
from pytest_sabot.sim.procedures.types import FinalAnswer, ToolRequest
from pytest_sabot.sim.request import ToolExchange
from pytest_sabot.sim.sections import gather

ROOT = Path(__file__).resolve().parents[2]


def _held_find(data: dict[str, Any]) -> None:
    data["faults"] = [{"id": "hung-lookup", "fault": "hung_tool", "tool": "find_tickets"}]


def test_O12_is_declared_once_as_a_lab_operator_that_holds_calls() -> None:
    found = declaration("O12")
    assert found.lab and found.holds_calls and not found.standard
    assert "O12" in lab_operator_ids()
    assert FAULTS["hung_tool"].operator == "O12"
    assert FAULTS["hung_tool"].intercept.__module__ == "pytest_sabot.lab.faults.o12_hung_tool"


def test_I131_a_held_call_runs_into_the_deadline_in_virtual_time() -> None:
    s = scenario("create-lost-before-commit", _held_find)
    after: list[str] = []

    def body(ctx: AgentContext) -> None:
        try:
            ctx.call_tool("find_tickets", {"request_key": ctx.task.request_key})
        except CallHeld as held:
            after.append(held.request_id)
        ctx.call_tool("get_customer", {"customer_id": ctx.task.customer_id})  # refused

    record = run(s, body)
    assert after == ["r1"]
    streams = record.streams
    assert [r.tool for r in streams.requests] == ["find_tickets"]
    assert streams.deliveries == [] and streams.effects == [] and streams.observations == []
    assert record.execution.status == "deadline_exceeded"
    assert "r1 (find_tickets) was held unanswered" in record.execution.detail
    assert record.measurement.virtual_ms == s.limits.deadline_ms
    (check,) = record.gate.coverage
    assert (check.status, check.landed) == ("activated", True), check.evidence
    assert record.gate.outcome == "inconclusive"
    assert any("deadline_exceeded" in reason for reason in record.gate.reasons)


def test_I131_the_held_call_probe_fails_when_an_answer_was_shown() -> None:
    s = scenario("create-lost-before-commit", _held_find)

    def body(ctx: AgentContext) -> None:
        ctx.call_tool("find_tickets", {"request_key": ctx.task.request_key})

    record = run(s, body)
    shown = record.streams.requests[0]
    answered = ObservationEvent(
        seq=shown.seq + 1, at_ms=0, observation_id="o1", request_id=shown.request_id,
        observation=Observation(ok=True, tool="find_tickets", result={"tickets": []}))
    tampered = record.streams.model_copy(update={"observations": [answered]})
    probe = FAULTS["hung_tool"].probe(tampered, record.coverage[0])
    assert not probe.landed and "shown an answer" in probe.evidence


def _bridge(tmp_path: Path, bound: float) -> tuple[LabSeams, TraceWriter, LabSession, Any]:
    root = standard_root()
    view, private = load_public("T6", root, "v0.2"), load_private("T6", root)
    cell = Cell(wave=103, framework="langgraph", config="default", operator="O12",
                task="T6", seed=21)
    full = lab_scenario(cell, view, private)
    session = LabSession(full.model_copy(update={"expect": Expectations()}), source="t")
    op = arm_lab_operator(cell, private)
    trace = TraceWriter(tmp_path / "O12")
    return LabSeams(trace, session, op, bound), trace, session, (full, op, view)


def test_I131_the_bridge_holds_the_pipeline_until_the_hang_bound(tmp_path: Path) -> None:
    seams, trace, session, (full, op, _view) = _bridge(tmp_path, 0.05)
    stopped: list[str] = []
    seams.on_deadline = lambda: stopped.append("gateway closed")
    with pytest.raises(CallHeld):
        seams.invoke("find_tickets", {"request_key": "REQ-4186"})
    assert stopped == ["gateway closed"]  # the deadline stops the pipeline's model calls
    assert seams.deadline is not None and "find_tickets#1 was held unanswered" in seams.deadline
    kinds = [e.kind for e in trace.events()]
    assert kinds == ["tool_call", "injection"]  # no tool_result: nothing was ever shown
    # Every later call is refused: the run's deadline has passed.
    answer = seams.invoke("get_customer", {"customer_id": "C-1"})
    assert "run_stopped" in answer
    record = session.finish(AgentInfo(name="t", kind="framework", fixture=True),
                            judged_as=full)
    assert record.execution.status == "deadline_exceeded"
    op.record_check(next(c for c in record.gate.coverage if c.id == op.entry.id))
    probe = op.probe(trace.events())
    assert probe.landed and not probe.consumed, probe.evidence


def test_I131_a_held_call_without_a_hang_bound_is_a_clear_error(tmp_path: Path) -> None:
    seams, _trace, _session, _ = _bridge(tmp_path, 1.0)
    seams.hang_bound_s = None
    with pytest.raises(RuntimeError, match="hang_bound_s"):
        seams.invoke("find_tickets", {"request_key": "REQ-4186"})


def test_I131_a_matrix_running_O12_must_declare_its_hang_bound() -> None:
    base: dict[str, object] = {
        "wave": 150, "name": "x", "title": "t", "rules": "v0.2.1", "flags_protocol": False,
        "contract_revision": "v0.2", "seeds_file": "x.json", "lab": True,
        "operators": ["O12"], "tasks": ["T6"],
    }
    with pytest.raises(ValueError, match="hang_bound_s"):
        WaveSpec.model_validate(base)
    assert WaveSpec.model_validate({**base, "hang_bound_s": 2}).hang_bound_s == 2


def test_I131_a_run_stopped_at_the_deadline_is_not_a_run_error(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "cell")
    writer.emit("run_start", "harness", cell_id="langgraph-default-O12-T6-s21", wave=103,
                framework="langgraph", config="default", operator="O12", task="T6", seed=21,
                rules="v0.2.1", model="sim:realistic", flags_protocol=False, versions={},
                attempt=1, materials=["request.md"])
    writer.emit("run_end", "harness", status="deadline",
                detail="the cell's deadline (3s hang bound) was reached while find_tickets#1 "
                       "was held unanswered")
    writer.finish()
    trace: Trace = read_trace(tmp_path / "cell")
    assert run_error_reason(trace) is None
    timed_out = tmp_path / "other"
    shutil.copytree(tmp_path / "cell", timed_out)
    events = timed_out / "events.jsonl"
    events.write_text(events.read_text().replace('"deadline"', '"timeout"'))
    assert run_error_reason(read_trace(timed_out)) is not None  # a harness timeout still is


def _worker(history: list[ToolExchange], recovery: t6.Recovery) -> Any:
    root = standard_root()
    view = load_public("T6", root, "v0.2")
    assert view.lab is not None
    catalog = build_catalog(view.lab.contracts, list(view.lab.capabilities))
    prompt = worker_messages(view, catalog, 0, "")
    sections = gather([prompt.system, prompt.user])
    return t6.worker_step(sections, history, weak=False, recovery=recovery)


FRAMEWORK_TIMEOUT = "Error: TimeoutError: the tool call find_tickets timed out after 30 s"


def test_I132_after_a_lookup_timed_out_the_worker_looks_again_not_blind() -> None:
    asked = ToolExchange("find_tickets", {"request_key": "REQ-4186"}, FRAMEWORK_TIMEOUT)
    step = _worker([asked], "read_back")
    assert isinstance(step, ToolRequest) and step.tool == "wait"
    waited = ToolExchange("wait", {"ms": t6.TIMEOUT_BACKOFF_MS}, '{"ok": true}')
    step = _worker([asked, waited], "fresh_key")
    assert isinstance(step, ToolRequest) and step.tool == "find_tickets"
    history = [asked, waited] * t6.ATTEMPTS
    history = [h for h in history if h.name == "find_tickets"][: t6.ATTEMPTS]
    final = _worker(history, "stable_key")
    assert isinstance(final, FinalAnswer)  # never a create after lookups that never answered
    assert "TICKET: none" in final.text and "find_tickets answered timeout" in final.text


def test_I132_a_worker_that_gives_up_reports_the_lookup_that_timed_out() -> None:
    asked = ToolExchange("find_tickets", {"request_key": "REQ-4186"}, FRAMEWORK_TIMEOUT)
    final = _worker([asked], "give_up")
    assert isinstance(final, FinalAnswer)
    assert "find_tickets answered timeout" in final.text


def test_I132_an_error_that_is_not_a_timeout_is_read_as_before() -> None:
    asked = ToolExchange("find_tickets", {"request_key": "REQ-4186"}, "Error: tool crashed")
    step = _worker([asked], "read_back")
    assert isinstance(step, ToolRequest) and step.tool == "create_ticket"


@pytest.mark.slow
def test_L_the_hung_tool_matrix_is_registered_apart(tmp_path: Path) -> None:
    spec, cells = load_wave("hung-tool", ROOT)
    assert spec.lab and spec.operators == ["O12"] and spec.hang_bound_s is not None
    assert len(cells) == 36 and sum(c.is_baseline for c in cells) == 18
    root = tmp_path / "copy"
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(ROOT / folder, root / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    waves: list[int | str] = [3, "lab", "hung-tool"]
    before = {w: load_standard(w, root).registration_hash() for w in waves}
    spec_file = root / "tasks" / "T6" / "private" / "operators-O12.yaml"
    spec_file.write_text(spec_file.read_text() + "\n")
    after = {w: load_standard(w, root).registration_hash() for w in waves}
    assert after[3] == before[3] and after["lab"] == before["lab"]
    assert after["hung-tool"] != before["hung-tool"]


def test_I131_a_held_run_replays_to_the_same_record() -> None:
    s = scenario("create-lost-before-commit", _held_find)

    def body(ctx: AgentContext) -> None:
        ctx.call_tool("get_customer", {"customer_id": ctx.task.customer_id})
        ctx.call_tool("find_tickets", {"request_key": ctx.task.request_key})

    report = replay_run(run(s, body))
    assert report.reproduction == "verified", report.first_difference
    assert report.original_gate == report.replayed_gate == "inconclusive"


@pytest.mark.slow
def test_I131_a_time_limit_shorter_than_the_hang_bound_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest("--sabot-wave=hung-tool", "--sabot-timeout=2",
                                "--collect-only", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--sabot-timeout=2*hang_bound_s (3 s)*"])
    fine = pytester.runpytest("--sabot-wave=hung-tool", "--sabot-timeout=30",
                              "--collect-only", "-q", "-p", "no:cacheprovider")
    assert fine.ret == 0
