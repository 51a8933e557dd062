"""The LangGraph pipeline against the standard's section 5 mapping and section 8 config.

These tests drive the real langgraph graph and the real ChatOpenAI client over HTTP to a
loopback OpenAI-compatible server on 127.0.0.1 that answers from a per-agent script. The
run context is a small test implementation of the RunContext protocol writing a real
trace, so every route of the graph is exercised end to end.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from loopback import CONTRACT_LINE, REJECTION_LAYOUTS, LoopbackContext, Reply, ScriptedServer

from pytest_sabot.adapters import get_adapter
from pytest_sabot.adapters.langgraph.pipeline import (
    INVOKE_VERSION,
    MAX_WORKER_MODEL_CALLS,
    parse_verdict,
    run,
)
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.trace_io import read_trace


def make_context(
    server: ScriptedServer, tmp_path: Path, config: str = "default", **kwargs: Any
) -> LoopbackContext:
    cell = Cell(wave=1, framework="langgraph", config=config, operator=None, task="T1", seed=11)
    return LoopbackContext(cell=cell, run_dir=tmp_path / "run", server=server, **kwargs)


def events(ctx: LoopbackContext, kind: str | None = None) -> list[Any]:
    return [e for e in ctx.trace.events() if kind is None or e.kind == kind]


def kinds(ctx: LoopbackContext) -> list[str]:
    return [e.kind for e in ctx.trace.events() if e.kind not in ("model_call", "run_start")]


def tool_then(draft: Callable[[str], str]) -> list[Reply]:
    """A worker pass: one lookup call, then a draft built from the observation it got."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        observation = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "tool")
        return {"content": draft(observation)}

    return [{"tool_calls": [("record_lookup", {"record": "R-7"})]}, reply]


GOOD = lambda value: f"{CONTRACT_LINE} R-7 = {value}"  # noqa: E731
NO_CONTRACT = lambda value: f"R-7 measured {value}"  # noqa: E731
APPROVE = {"content": "Checked against the lookup.\nVERDICT: APPROVE"}
REJECT = {"content": "The value contradicts the record.\nVERDICT: REJECT - 47.1 is not R-7's value"}


# --------------------------------------------------------------------------- section 5


def test_S5_verdict_token_parse_is_case_insensitive_first_match() -> None:
    first = parse_verdict("notes\nverdict: reject - unit ID 4417 is wrong\nVERDICT: APPROVE")
    assert (first.decision, first.reason) == ("reject", "unit ID 4417 is wrong")
    assert parse_verdict("Verdict:approve").decision == "approve"
    assert parse_verdict("VERDICT: REJECT").reason == ""
    assert parse_verdict("This data looks off but fine.").decision is None


@pytest.mark.slow
def test_S5_reviewer_approve_routes_to_emit_with_the_delivered_draft(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {"worker": tool_then(GOOD), "reviewer": [APPROVE]}
    ctx = make_context(server, tmp_path)
    run(ctx)
    assert kinds(ctx) == [
        "tool_call",
        "tool_result",
        "agent_output",
        "message",
        "review",
        "artifact",
    ]
    review = events(ctx, "review")[0]
    assert review.component == "reviewer"
    assert review.text == APPROVE["content"]
    assert review.data.round == 0
    assert ctx.emitted == ["RESULT: R-7 = 47.1"]


@pytest.mark.slow
def test_S5_reviewer_reject_reinvokes_the_worker_once_carrying_the_reason(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {
        "worker": [*tool_then(GOOD), {"content": "RESULT: R-7 = 47.1 (rechecked)"}],
        "reviewer": [REJECT, APPROVE],
    }
    ctx = make_context(server, tmp_path)
    run(ctx)
    (retry,) = events(ctx, "retry")
    assert retry.data.source == "revise"
    assert retry.data.reason == "47.1 is not R-7's value"
    assert retry.data.feedback == REJECT["content"]
    assert retry.component == "worker"
    assert ctx.worker_prompts == [(0, ""), (1, REJECT["content"])]
    outputs = [(e.data.stage, e.data.round) for e in events(ctx, "agent_output")]
    assert outputs == [("worker", 0), ("revise", 1)]
    assert [e.data.round for e in events(ctx, "review")] == [0, 1]
    assert "FEEDBACK" in server.requests_of("worker")[-1]["messages"][1]["content"]
    assert ctx.emitted == ["RESULT: R-7 = 47.1 (rechecked)"]


@pytest.mark.parametrize("layout", sorted(REJECTION_LAYOUTS))
def test_S5_the_revise_pass_carries_the_rejection_text_in_every_layout(
    server: ScriptedServer, tmp_path: Path, layout: str
) -> None:
    """Issue 22 item 5: an em dash, a colon or a reason on the next line still hands the
    worker the reviewer's rejection text; the recorded reason is the standard's parse."""
    reply, parsed = REJECTION_LAYOUTS[layout]
    server.scripts = {
        "worker": [*tool_then(GOOD), {"content": "RESULT: R-7 = 47.1 (rechecked)"}],
        "reviewer": [{"content": reply}, APPROVE],
    }
    ctx = make_context(server, tmp_path)
    run(ctx)
    (retry,) = events(ctx, "retry")
    assert (retry.data.reason, retry.data.feedback) == (parsed, reply)
    assert ctx.worker_prompts == [(0, ""), (1, reply)]
    revise_user = server.requests_of("worker")[-1]["messages"][1]["content"]
    assert "47.1 is not R-7's value" in revise_user


def test_S5_the_revise_loop_runs_at_most_once(server: ScriptedServer, tmp_path: Path) -> None:
    server.scripts = {
        "worker": [*tool_then(GOOD), {"content": "RESULT: R-7 = 47.1"}],
        "reviewer": [REJECT, REJECT],
    }
    ctx = make_context(server, tmp_path)
    run(ctx)
    assert len(events(ctx, "retry")) == 1
    assert len(events(ctx, "review")) == 2
    assert ctx.emitted == ["RESULT: R-7 = 47.1"]


def test_S5_no_verdict_token_is_no_reject(server: ScriptedServer, tmp_path: Path) -> None:
    server.scripts = {
        "worker": tool_then(GOOD),
        "reviewer": [{"content": "This data looks off, but I will let it pass."}],
    }
    ctx = make_context(server, tmp_path)
    run(ctx)
    assert events(ctx, "retry") == []
    assert events(ctx, "review")[0].text == "This data looks off, but I will let it pass."
    assert len(ctx.emitted) == 1


def test_S5_the_reviewer_sees_only_the_text_the_handoff_delivered(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {"worker": tool_then(GOOD), "reviewer": [APPROVE]}
    ctx = make_context(server, tmp_path, alter=lambda text: text.replace("47.1", "74.1"))
    run(ctx)
    assert ctx.reviewer_drafts == [(0, "RESULT: R-7 = 74.1")]
    reviewer_user = server.requests_of("reviewer")[0]["messages"][1]["content"]
    assert "74.1" in reviewer_user
    assert "47.1" not in reviewer_user
    assert events(ctx, "agent_output")[0].text == "RESULT: R-7 = 47.1"
    assert ctx.emitted == ["RESULT: R-7 = 74.1"]


def test_S5_validator_first_contract_failure_routes_command_goto_revise(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {
        "worker": [*tool_then(NO_CONTRACT), {"content": "RESULT: R-7 = 47.1"}],
        "reviewer": [APPROVE, APPROVE],
    }
    ctx = make_context(server, tmp_path, config="guardrail")
    run(ctx)
    assert kinds(ctx) == [
        "tool_call",
        "tool_result",
        "agent_output",
        "message",
        "review",
        "guardrail",
        "route",
        "retry",
        "agent_output",
        "message",
        "review",
        "guardrail",
        "artifact",
    ]
    failed, passed = events(ctx, "guardrail")
    assert (failed.component, failed.data.name, failed.data.guardrail_kind) == (
        "validator",
        "contract",
        "contract",
    )
    assert failed.data.success is False
    assert failed.data.feedback == "no line starts with 'RESULT:'"
    assert passed.data.success is True
    (route,) = events(ctx, "route")
    assert (route.data.goto, route.data.source) == ("revise", "validator")
    assert route.data.reason == failed.data.feedback
    assert events(ctx, "retry")[0].data.reason == failed.data.feedback
    assert ctx.worker_prompts[1] == (1, failed.data.feedback)
    assert ctx.emitted == ["RESULT: R-7 = 47.1"]


def test_S5_second_validator_failure_interrupts_and_records_the_task_failed(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {
        "worker": [*tool_then(NO_CONTRACT), {"content": "R-7 is 47.1"}],
        "reviewer": [APPROVE, APPROVE],
    }
    ctx = make_context(server, tmp_path, config="guardrail")
    run(ctx)
    assert [e.data.success for e in events(ctx, "guardrail")] == [False, False]
    assert len(events(ctx, "route")) == 1
    (interrupt,) = events(ctx, "interrupt")
    assert interrupt.component == "validator"
    assert interrupt.data.reason == "no line starts with 'RESULT:'"
    assert kinds(ctx)[-2:] == ["interrupt", "run_end"]
    assert events(ctx, "run_end")[0].data.status == "task_failed"
    assert ctx.emitted == []


def test_I32_validator_first_failure_routes_revise_after_the_reviewer_used_its_pass(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """Section 8: the validator's first failure routes to revise, whatever the reviewer
    did before; only its own second failure interrupts."""
    server.scripts = {
        "worker": [*tool_then(GOOD), {"content": "R-7 is 47.1"}, {"content": "RESULT: R-7 = 47.1"}],
        "reviewer": [REJECT, APPROVE, APPROVE],
    }
    ctx = make_context(server, tmp_path, config="guardrail")
    run(ctx)
    assert [e.data.source for e in events(ctx, "retry")] == ["revise", "revise"]
    (route,) = events(ctx, "route")
    assert (route.data.goto, route.data.source) == ("revise", "validator")
    assert [e.data.success for e in events(ctx, "guardrail")] == [False, True]
    assert events(ctx, "interrupt") == []
    assert [r for r, _ in ctx.worker_prompts] == [0, 1, 2]
    assert ctx.worker_prompts[2][1] == "no line starts with 'RESULT:'"
    assert [e.data.round for e in events(ctx, "review")] == [0, 1, 2]
    assert ctx.emitted == ["RESULT: R-7 = 47.1"]


def test_I32_the_validators_second_failure_interrupts_after_the_reviewer_used_its_pass(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {
        "worker": [*tool_then(GOOD), {"content": "R-7 is 47.1"}, {"content": "47.1"}],
        "reviewer": [REJECT, APPROVE, APPROVE],
    }
    ctx = make_context(server, tmp_path, config="guardrail")
    run(ctx)
    assert [e.data.success for e in events(ctx, "guardrail")] == [False, False]
    assert len(events(ctx, "route")) == 1
    assert len(events(ctx, "interrupt")) == 1
    assert events(ctx, "run_end")[0].data.status == "task_failed"
    assert ctx.emitted == []


def test_I32_the_reviewers_revise_pass_is_its_own_after_a_validator_revise(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {
        "worker": [*tool_then(NO_CONTRACT), {"content": "RESULT: R-7 = 74.1"},
                   {"content": "RESULT: R-7 = 47.1"}],
        "reviewer": [APPROVE, REJECT, APPROVE],
    }
    ctx = make_context(server, tmp_path, config="guardrail")
    run(ctx)
    assert [e.data.reason for e in events(ctx, "retry")] == [
        "no line starts with 'RESULT:'",
        "47.1 is not R-7's value",
    ]
    assert [e.data.success for e in events(ctx, "guardrail")] == [False, True]
    assert ctx.emitted == ["RESULT: R-7 = 47.1"]


def test_I33_a_capped_worker_answers_on_one_more_call_offering_no_tools(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """Every allowed call asks for a tool: the pass still hands the reviewer a draft, made
    by one more call with no tools offered, and the cap is on record."""
    looping: list[Reply] = [
        {"tool_calls": [("record_lookup", {"record": "R-7"})]}
        for _ in range(MAX_WORKER_MODEL_CALLS)
    ]
    server.scripts = {
        "worker": [*looping, {"content": GOOD("47.1")}],
        "reviewer": [APPROVE],
    }
    ctx = make_context(server, tmp_path)
    run(ctx)
    requests = server.requests_of("worker")
    assert len(requests) == MAX_WORKER_MODEL_CALLS + 1
    assert all(r.get("tools") for r in requests[:-1])
    assert "tools" not in requests[-1] and "tool_choice" not in requests[-1]
    (cap,) = events(ctx, "cap")
    assert (cap.component, cap.data.cap, cap.data.limit, cap.data.ending) == (
        "worker", "worker_model_calls", MAX_WORKER_MODEL_CALLS, "forced_final_answer"
    )
    worker_calls = [e for e in events(ctx, "model_call") if e.component == "worker"]
    assert cap.seq == worker_calls[-1].seq + 1  # right after the call that answered
    assert events(ctx, "agent_output")[0].text == GOOD("47.1")
    assert ctx.reviewer_drafts == [(0, GOOD("47.1"))]


def test_I33_a_worker_that_answers_within_the_cap_records_no_cap(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {"worker": tool_then(GOOD), "reviewer": [APPROVE]}
    ctx = make_context(server, tmp_path)
    run(ctx)
    assert events(ctx, "cap") == []
    assert len(server.requests_of("worker")) == 2


def test_S5_langgraph_v1_invoke_output_carries_interrupts_under_the_interrupt_key() -> None:
    """Pins the framework behaviour the escalate surface reads (langgraph 1.2.9): with the
    output version the adapter passes, an interrupt shows as '__interrupt__' in a dict."""
    from typing import TypedDict

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    class State(TypedDict, total=False):
        x: int

    def stop(state: State) -> State:
        interrupt("second contract failure")
        return {}

    graph = StateGraph(State)
    graph.add_node("stop", stop)
    graph.add_edge(START, "stop")
    graph.add_edge("stop", END)
    compiled = graph.compile(checkpointer=InMemorySaver())
    result = compiled.invoke(
        {"x": 1}, config={"configurable": {"thread_id": "t"}}, version=INVOKE_VERSION
    )
    assert isinstance(result, dict)
    assert [i.value for i in result["__interrupt__"]] == ["second contract failure"]


# --------------------------------------------------------------------------- section 8


def test_S8_guardrail_config_records_a_passing_contract_check(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {"worker": tool_then(GOOD), "reviewer": [APPROVE]}
    ctx = make_context(server, tmp_path, config="guardrail")
    run(ctx)
    (check,) = events(ctx, "guardrail")
    assert check.data.success is True
    assert events(ctx, "route") == []
    assert ctx.emitted == ["RESULT: R-7 = 47.1"]


def test_S8_default_config_has_no_validator(server: ScriptedServer, tmp_path: Path) -> None:
    server.scripts = {"worker": tool_then(NO_CONTRACT), "reviewer": [APPROVE]}
    ctx = make_context(server, tmp_path)
    run(ctx)
    assert events(ctx, "guardrail") == []
    assert ctx.emitted == ["R-7 measured 47.1"]


def test_S8_no_temperature_is_sent_and_each_agent_uses_its_own_url(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {"worker": tool_then(GOOD), "reviewer": [APPROVE]}
    ctx = make_context(server, tmp_path)
    run(ctx)
    assert [x.agent for x in server.exchanges] == ["worker", "worker", "reviewer"]
    for exchange in server.exchanges:
        assert "temperature" not in exchange.body
        assert exchange.body["model"] == "stub-model"
        assert exchange.headers["authorization"] == "Bearer run-token-123"


def test_S8_the_client_never_retries_a_failed_call(server: ScriptedServer, tmp_path: Path) -> None:
    import openai

    server.scripts = {"worker": [{"status": 500}, {"content": "RESULT: late"}]}
    ctx = make_context(server, tmp_path)
    with pytest.raises(openai.InternalServerError):
        run(ctx)
    assert len(server.exchanges) == 1


# --------------------------------------------------------------------------- stage protocol


def test_worker_tools_are_bound_and_their_observations_reach_the_model(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {"worker": tool_then(GOOD), "reviewer": [APPROVE]}
    ctx = make_context(server, tmp_path)
    run(ctx)
    first, second = server.requests_of("worker")
    (tool,) = first["tools"]
    assert tool["function"]["name"] == "record_lookup"
    assert tool["function"]["parameters"]["required"] == ["record"]
    assert second["messages"][-1] == {
        "role": "tool",
        "content": "47.1",
        "tool_call_id": "call_1_0",
    }
    assert "tools" not in server.requests_of("reviewer")[0]


def test_an_unknown_tool_name_gets_an_error_observation(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {
        "worker": [{"tool_calls": [("delete_everything", {})]}, {"content": "RESULT: x"}],
        "reviewer": [APPROVE],
    }
    ctx = make_context(server, tmp_path)
    run(ctx)
    answer = server.requests_of("worker")[1]["messages"][-1]
    assert answer["role"] == "tool"
    assert "no tool named 'delete_everything'" in answer["content"]
    assert events(ctx, "tool_call") == []


def test_model_calls_are_in_the_trace_before_the_events_they_produced(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {"worker": tool_then(GOOD), "reviewer": [APPROVE]}
    ctx = make_context(server, tmp_path)
    run(ctx)
    order = [(e.kind, e.component) for e in events(ctx)]
    assert order.index(("model_call", "reviewer")) < order.index(("review", "reviewer"))
    worker_calls = [i for i, k in enumerate(order) if k == ("model_call", "worker")]
    assert len(worker_calls) == 2
    assert worker_calls[0] < order.index(("tool_call", "worker"))
    assert worker_calls[1] < order.index(("agent_output", "worker"))


def test_the_trace_is_well_formed_and_identical_across_two_runs(
    server: ScriptedServer, tmp_path: Path
) -> None:
    def once(name: str) -> list[tuple[str, str, str, Any]]:
        server.scripts = {
            "worker": [*tool_then(NO_CONTRACT), {"content": "RESULT: R-7 = 47.1"}],
            "reviewer": [REJECT, APPROVE],
        }
        server.exchanges.clear()
        ctx = make_context(server, tmp_path / name, config="guardrail")
        run(ctx)
        ctx.trace.finish()
        trace = read_trace(ctx.run_dir)
        return [(e.kind, e.component, e.text, e.data.model_dump()) for e in trace.events]

    assert once("a") == once("b")


def test_no_secret_reaches_the_trace(server: ScriptedServer, tmp_path: Path) -> None:
    server.scripts = {"worker": tool_then(GOOD), "reviewer": [APPROVE]}
    ctx = make_context(server, tmp_path)
    run(ctx)
    ctx.trace.finish()
    assert "run-token-123" not in (ctx.run_dir / "events.jsonl").read_text()


# --------------------------------------------------------------------------- registry


def test_importing_the_adapter_registry_imports_no_framework() -> None:
    probe = (
        "import sys, pytest_sabot.adapters\n"
        "from pytest_sabot.core.frameworks import adapters\n"
        "declared = [d.name for d in adapters()]\n"
        "heavy = [m for m in ('langgraph', 'langchain_openai', 'crewai', 'autogen_agentchat',"
        " 'agent_framework') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert declared == ['langgraph', 'crewai', 'autogen', 'agent_framework'], declared\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True)


def test_get_adapter_returns_the_langgraph_run_and_rejects_unknown_names() -> None:
    assert get_adapter("langgraph") is run
    with pytest.raises(ValueError, match="framework"):
        get_adapter("smolagents")


# --------------------------------------------------------------------------- real cells
# Whole cells through the harness (run_cell), the gateway and the embedded model: no key,
# no network beyond 127.0.0.1.


@dataclass
class CellRunner:
    std: Any
    gateway_url: str
    out_dir: Path

    def run(self, cell_id: str, model: str, out: str = "") -> tuple[Any, Any, Path]:
        from pytest_sabot.core.records import cell_dir
        from pytest_sabot.harness.run import RunSettings, run_cell

        out_dir = self.out_dir / model.replace(":", "-") / out
        settings = RunSettings(
            root=self.std.root, out_dir=out_dir, gateway_url=self.gateway_url, model=model
        )
        cell = self.std.cell(cell_id)
        outcome = run_cell(cell, self.std.wave, settings)
        run_dir = cell_dir(out_dir, cell_id)
        return outcome, read_trace(run_dir), run_dir


@pytest.fixture(scope="module")
def cells(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CellRunner]:
    from pytest_sabot.gateway import start_gateway
    from pytest_sabot.matrix.standard import load_standard

    std = load_standard(1)
    with start_gateway() as gateway:
        yield CellRunner(std, gateway.url, tmp_path_factory.mktemp("langgraph-cells"))


def verdicts(trace: Any) -> list[str | None]:
    return [parse_verdict(e.text).decision for e in trace.of_kind("review")]


@pytest.mark.slow
@pytest.mark.parametrize("config", ["default", "guardrail"])
@pytest.mark.parametrize("task", ["T1", "T2", "T3", "T4", "T5"])
def test_S3_baseline_passes_under_sim_vigilant(cells: CellRunner, config: str, task: str) -> None:
    outcome, trace, _ = cells.run(f"langgraph-{config}-baseline-{task}-s11", "sim:vigilant")
    assert outcome.error is None
    assert outcome.passed, outcome.pass_reason
    assert verdicts(trace) == ["approve"]
    assert [e.data.success for e in trace.of_kind("guardrail")] == (
        [True] if config == "guardrail" else []
    )
    assert trace.of_kind("run_end")[0].data.status == "completed"


@pytest.mark.slow
def test_S5_vigilant_guardrail_reviewer_rejects_O1_as_a_hard_act(cells: CellRunner) -> None:
    from pytest_sabot.results.adjudicate import score_fault_dir

    cell_id = "langgraph-guardrail-O1-T1-s11"
    outcome, trace, run_dir = cells.run(cell_id, "sim:vigilant")
    assert outcome.error is None
    assert verdicts(trace)[0] == "reject"
    (retry,) = trace.of_kind("retry")
    assert "74.1" in retry.data.reason
    verdict = score_fault_dir(cells.std, cells.std.cell(cell_id), run_dir, "passed")
    assert verdict.detection == "DETECTED_HARD"
    assert {"reject-reviewer", "retry-revise"} <= {act.row for act in verdict.acts}


@pytest.mark.slow
@pytest.mark.parametrize("config", ["default", "guardrail"])
def test_S5_a_credulous_reviewer_never_rejects(cells: CellRunner, config: str) -> None:
    from pytest_sabot.results.adjudicate import score_fault_dir

    cell_id = f"langgraph-{config}-O1-T1-s11"
    outcome, trace, run_dir = cells.run(cell_id, "sim:credulous")
    assert outcome.error is None
    assert "reject" not in verdicts(trace)
    assert trace.of_kind("retry") == []
    verdict = score_fault_dir(cells.std, cells.std.cell(cell_id), run_dir, "passed")
    assert verdict.detected_hard is False


@pytest.mark.slow
def test_S5_validator_escalates_by_interrupt_in_a_real_cell(cells: CellRunner) -> None:
    from pytest_sabot.results.adjudicate import score_fault_dir

    cell_id = "langgraph-guardrail-O4-T2-s11"
    outcome, trace, run_dir = cells.run(cell_id, "sim:vigilant")
    assert outcome.error is None
    assert outcome.artifact is None
    assert [e.data.success for e in trace.of_kind("guardrail")][-1] is False
    (interrupt,) = trace.of_kind("interrupt")
    assert interrupt.data.reason
    assert trace.of_kind("run_end")[0].data.status == "task_failed"
    verdict = score_fault_dir(cells.std, cells.std.cell(cell_id), run_dir, "passed")
    assert "escalate-interrupt" in {act.row for act in verdict.acts}


@pytest.mark.slow
def test_a_cell_runs_to_the_same_trace_twice(cells: CellRunner) -> None:
    def content(trace: Any) -> list[dict[str, Any]]:
        out = []
        for event in trace.events:
            dumped = event.model_dump(exclude={"t"})
            dumped["data"].pop("latency_ms", None)
            out.append(dumped)
        return out

    cell_id = "langgraph-guardrail-O3-T2-s11"
    first = cells.run(cell_id, "sim:realistic", out="first")[1]
    second = cells.run(cell_id, "sim:realistic", out="second")[1]
    assert content(first) == content(second)
