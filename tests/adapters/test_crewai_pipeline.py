"""The CrewAI pipeline against the standard's section 5 mapping and section 8 config.

These tests run real crewai 1.15.5 crews over HTTP, through CrewAI's native OpenAI
provider and the real OpenAI SDK, to a loopback OpenAI-compatible server on 127.0.0.1 that
answers from a per-agent script (worker, reviewer, guardrail). The run context is a small
test implementation of the RunContext protocol writing a real trace, so every path of the
pipeline (approve, reject -> revise, contract and LLM guardrail failures, guardrail-retry
exhaustion) is exercised end to end. The recorded traces are also scored against the
published CrewAI mapping (mappings/crewai.yaml) to show each act is adjudicable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from loopback import REJECTION_LAYOUTS, LoopbackContext, Reply, ScriptedServer

from pytest_sabot.adapters import get_adapter
from pytest_sabot.adapters.crewai.pipeline import (
    EXHAUSTION_MECHANISM,
    GUARDRAIL_MAX_RETRIES,
    MAX_AGENT_ITERATIONS,
    GuardrailOutcome,
    args_model,
    guardrail_outcome_events,
    is_infrastructure_error,
    parse_exhaustion,
    run,
)
from pytest_sabot.core.context import ToolHandle
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.models.mapping import load_mapping
from pytest_sabot.core.prompt_format import parse
from pytest_sabot.core.trace_io import read_trace
from pytest_sabot.scoring.acts import find_acts

REPO = Path(__file__).resolve().parents[2]

# The crewai record_lookup schema carries descriptions and an optional unit argument.
LOOKUP_PROPERTIES: dict[str, Any] = {
    "record": {"type": "string", "description": "Record id."},
    "unit": {"type": "string", "description": "Optional unit."},
}


def make_context(server: ScriptedServer, run_dir: Path, config: str = "default") -> LoopbackContext:
    cell = Cell(wave=1, framework="crewai", config=config, operator="O1", task="T1", seed=11)  # type: ignore[arg-type]
    return LoopbackContext(
        cell=cell, run_dir=run_dir, server=server, lookup_properties=LOOKUP_PROPERTIES
    )


def finish(ctx: LoopbackContext) -> list[Any]:
    ctx.trace.finish()
    return list(read_trace(ctx.run_dir).events)


def kinds(events: list[Any], *wanted: str) -> list[Any]:
    return [e for e in events if e.kind in wanted]


def tool_then(draft: str) -> list[Reply]:
    """The worker's two model turns: one tool call, then its draft."""
    return [{"tool_calls": [("record_lookup", {"record": "R-7"})]}, {"content": draft}]


def verdict(valid: bool, feedback: str | None = None) -> Reply:
    """The LLM guardrail's structured reply (CrewAI's LLMGuardrailResult)."""
    return {"content": json.dumps({"valid": valid, "feedback": feedback})}


GOOD = "RESULT: R-7 = 47.1"
APPROVE = "Checked against the lookup.\nVERDICT: APPROVE"


def acts_of(events: list[Any], config: str, rules: str = "v0.1.3") -> list[tuple[str, str]]:
    from pytest_sabot.core.models.trace import Trace

    mapping = load_mapping(REPO, "crewai", rules)
    found = find_acts(Trace(events=events), mapping, config, 0, None)
    return [(a.act, a.row) for a in found]


# --------------------------------------------------------------------------- section 8, default


@pytest.mark.slow
def test_S8_crewai_default_worker_reviewer_approve_emits_the_reviewed_draft(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {"worker": tool_then(GOOD), "reviewer": [{"content": APPROVE}]}
    ctx = make_context(server, tmp_path / "run")
    run(ctx)
    events = finish(ctx)

    assert [e.kind for e in kinds(events, "agent_output", "message", "review", "artifact")] == [
        "agent_output",
        "message",
        "review",
        "artifact",
    ]
    (draft,) = kinds(events, "agent_output")
    assert draft.text == GOOD and draft.data.stage == "worker" and draft.data.round == 0
    (review,) = kinds(events, "review")
    assert review.component == "reviewer" and review.text == APPROVE
    assert ctx.emitted == [GOOD]
    assert not kinds(events, "retry", "guardrail", "escalation", "run_end")
    # The tool call went through the harness handle, after the model turn that asked for it.
    seqs = [e.kind for e in kinds(events, "model_call", "tool_call", "tool_result")]
    assert seqs[:3] == ["model_call", "tool_call", "tool_result"]
    assert kinds(events, "tool_call")[0].data.arguments == {"record": "R-7"}
    assert [e.component for e in kinds(events, "model_call")] == ["worker", "worker", "reviewer"]


@pytest.mark.slow
def test_S8_crewai_uses_native_openai_provider_without_temperature_or_own_retries(
    server: ScriptedServer, tmp_path: Path
) -> None:
    from crewai.llms.providers.openai.completion import OpenAICompletion

    from pytest_sabot.adapters.crewai.pipeline import _native_llm

    server.scripts = {"worker": tool_then(GOOD), "reviewer": [{"content": APPROVE}]}
    ctx = make_context(server, tmp_path / "run")
    run(ctx)
    finish(ctx)
    llm = _native_llm(ctx, "worker")
    assert isinstance(llm, OpenAICompletion)
    assert llm.max_retries == 0
    for exchange in server.exchanges:
        assert "temperature" not in exchange.body
        assert exchange.body["model"] == "stub-model"
    (first, *_), reviewer = server.requests_of("worker"), server.requests_of("reviewer")
    assert [t["function"]["name"] for t in first["tools"]] == ["record_lookup"]
    assert "tools" not in reviewer[0]
    # The harness prompt reaches the model with its sections intact inside CrewAI's template.
    system = next(m["content"] for m in first["messages"] if m["role"] == "system")
    user = next(m["content"] for m in first["messages"] if m["role"] == "user")
    assert [s.name for s in parse(system) if s.name] == ["ROLE"]
    assert [s.name for s in parse(user) if s.name] == ["TASK", "BRIEF", "ROUND"]


@pytest.mark.slow
def test_S5_crewai_reviewer_reject_with_revise_unused_rekicks_worker_carrying_the_reason(
    server: ScriptedServer, tmp_path: Path
) -> None:
    reason = "the value 47.1 does not match record R-7"
    server.scripts = {
        "worker": [*tool_then("RESULT: R-7 = 74.1"), *tool_then(GOOD)],
        "reviewer": [{"content": f"Mismatch.\nVERDICT: REJECT - {reason}"}, {"content": APPROVE}],
    }
    ctx = make_context(server, tmp_path / "run")
    run(ctx)
    events = finish(ctx)

    assert [e.kind for e in kinds(events, "agent_output", "review", "retry", "artifact")] == [
        "agent_output",
        "review",
        "retry",
        "agent_output",
        "review",
        "artifact",
    ]
    (retry,) = kinds(events, "retry")
    assert retry.data.source == "revise" and retry.data.reason == reason
    rejection = f"Mismatch.\nVERDICT: REJECT - {reason}"
    assert retry.data.feedback == rejection
    assert ctx.worker_prompts == [(0, ""), (1, rejection)]
    revise_user = next(
        m["content"] for m in server.requests_of("worker")[2]["messages"] if m["role"] == "user"
    )
    assert reason in revise_user
    second = kinds(events, "agent_output")[1]
    assert second.data.stage == "revise" and second.data.round == 1
    assert [r.data.round for r in kinds(events, "review")] == [0, 1]
    assert ctx.emitted == [GOOD]
    assert acts_of(events, "default") == [
        ("reject", "reject-reviewer"),
        ("retry_with_reason", "retry-revise"),
    ]


@pytest.mark.parametrize("layout", sorted(REJECTION_LAYOUTS))
def test_S5_crewai_the_revise_pass_carries_the_rejection_text_in_every_layout(
    server: ScriptedServer, tmp_path: Path, layout: str
) -> None:
    """Issue 22 item 5: the worker's re-kickoff is handed the reviewer's rejection text
    whatever the verdict line's layout; the recorded reason is the standard's parse."""
    reply, parsed = REJECTION_LAYOUTS[layout]
    server.scripts = {
        "worker": [*tool_then("RESULT: R-7 = 74.1"), *tool_then(GOOD)],
        "reviewer": [{"content": reply}, {"content": APPROVE}],
    }
    ctx = make_context(server, tmp_path / "run")
    run(ctx)
    (retry,) = kinds(finish(ctx), "retry")
    assert (retry.data.reason, retry.data.feedback) == (parsed, reply)
    assert ctx.worker_prompts == [(0, ""), (1, reply)]
    revise_user = next(
        m["content"] for m in server.requests_of("worker")[2]["messages"] if m["role"] == "user"
    )
    assert "47.1 is not R-7's value" in revise_user


def test_S5_crewai_one_revise_loop_only_second_reject_still_emits(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {
        "worker": [*tool_then("RESULT: a"), *tool_then("RESULT: b")],
        "reviewer": [{"content": "VERDICT: REJECT - one"}, {"content": "VERDICT: REJECT - two"}],
    }
    ctx = make_context(server, tmp_path / "run")
    run(ctx)
    events = finish(ctx)
    assert len(kinds(events, "retry")) == 1
    assert ctx.emitted == ["RESULT: b"]


# --------------------------------------------------------------------------- guardrail config


def test_S5_crewai_contract_guardrail_false_reason_is_recorded_and_retried_then_passes(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {
        "worker": [*tool_then("R-7 is 47.1"), *tool_then(GOOD)],
        "guardrail": [verdict(True)],
        "reviewer": [{"content": APPROVE}],
    }
    ctx = make_context(server, tmp_path / "run", "guardrail")
    run(ctx)
    events = finish(ctx)

    outcomes = [
        (e.data.guardrail_kind, e.data.success, e.data.retry_count, e.data.max_retries)
        for e in kinds(events, "guardrail")
    ]
    assert outcomes == [
        ("contract", False, 0, GUARDRAIL_MAX_RETRIES),
        ("contract", True, 1, GUARDRAIL_MAX_RETRIES),
        ("llm", True, 0, GUARDRAIL_MAX_RETRIES),
    ]
    failed = kinds(events, "guardrail")[0]
    assert failed.component == "guardrail"
    assert failed.data.feedback == "no line starts with 'RESULT:'"
    (retry,) = kinds(events, "retry")
    assert retry.data.source == "guardrail" and retry.data.reason == failed.data.feedback
    # Order: the rejected draft's model turn, the verdict, the retry, then the re-run worker.
    order = [
        (e.kind, e.component) for e in events if e.kind in ("model_call", "guardrail", "retry")
    ]
    assert order[:5] == [
        ("model_call", "worker"),
        ("model_call", "worker"),
        ("guardrail", "guardrail"),
        ("retry", "guardrail"),
        ("model_call", "worker"),
    ]
    retry_user = next(
        m["content"] for m in server.requests_of("worker")[2]["messages"] if m["role"] == "user"
    )
    assert "no line starts with 'RESULT:'" in retry_user
    assert ctx.emitted == [GOOD]
    assert ("reject", "reject-guardrail") in acts_of(events, "guardrail")
    assert ("retry_with_reason", "retry-guardrail") in acts_of(events, "guardrail")


def test_S5_crewai_llm_guardrail_failure_is_LLMGuardrailCompletedEvent_success_false(
    server: ScriptedServer, tmp_path: Path
) -> None:
    feedback = "the output does not say which record it reports"
    server.scripts = {
        "worker": [*tool_then(GOOD), *tool_then(GOOD + " (record R-7)")],
        "guardrail": [verdict(False, feedback), verdict(True)],
        "reviewer": [{"content": APPROVE}],
    }
    ctx = make_context(server, tmp_path / "run", "guardrail")
    run(ctx)
    events = finish(ctx)

    outcomes = [
        (e.data.guardrail_kind, e.data.success, e.data.retry_count, e.data.feedback)
        for e in kinds(events, "guardrail")
    ]
    # CrewAI re-checks a re-executed output only with the guardrail that failed it.
    assert outcomes == [
        ("contract", True, 0, ""),
        ("llm", False, 0, feedback),
        ("llm", True, 1, ""),
    ]
    assert [r.data.reason for r in kinds(events, "retry")] == [feedback]
    guardrail_request = server.requests_of("guardrail")[0]
    assert guardrail_request["response_format"]["json_schema"]["name"] == "LLMGuardrailResult"
    assert ctx.guardrail_text() in guardrail_request["messages"][-1]["content"]
    assert ctx.emitted == [GOOD + " (record R-7)"]


def test_S5_crewai_guardrail_retry_exhaustion_is_escalate_with_task_failed_not_run_error(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """Also pins the crewai 1.15.5 behaviour I34 reads: every guardrail attempt emits
    LLMGuardrailCompletedEvent with retry_count = the retries so far, and the failure at
    guardrail_max_retries is followed by an exception, not by another re-execution."""
    server.scripts = {
        "worker": [reply for _ in range(4) for reply in tool_then(GOOD)],
        "guardrail": [verdict(False, f"still wrong {n}") for n in range(4)],
    }
    ctx = make_context(server, tmp_path / "run", "guardrail")
    run(ctx)
    events = finish(ctx)

    llm = [e for e in kinds(events, "guardrail") if e.data.guardrail_kind == "llm"]
    assert [(e.data.success, e.data.retry_count) for e in llm] == [
        (False, 0),
        (False, 1),
        (False, 2),
        (False, 3),
    ]
    # Three retries announced; the fourth failure is the last one, CrewAI gives up.
    assert [r.data.reason for r in kinds(events, "retry")] == [
        "still wrong 0",
        "still wrong 1",
        "still wrong 2",
    ]
    (escalation,) = kinds(events, "escalation")
    assert escalation.data.mechanism == EXHAUSTION_MECHANISM
    assert escalation.data.message == (
        "Task failed guardrail 1 validation after 3 retries. Last error: still wrong 3"
    )
    assert (escalation.data.retry_count, escalation.data.max_retries) == (3, 3)
    assert events[-1].kind == "run_end" and events[-1].data.status == "task_failed"
    assert escalation.seq == events[-1].seq - 1 and escalation.seq > llm[-1].seq
    assert not kinds(events, "run_error", "artifact", "review")
    assert ctx.emitted == []
    assert ("escalate", "escalate-exhausted") in acts_of(events, "guardrail")


def test_I34_exhaustion_is_read_from_the_guardrail_events_when_the_exception_text_changes(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A later release that words its terminal exception differently still escalates: the
    decision rests on LLMGuardrailCompletedEvent(success=False) at guardrail_max_retries."""
    from crewai.task import Task

    original = Task._invoke_guardrail_function

    def reworded(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        except Exception as exc:
            raise RuntimeError("guardrail gave up on this output") from exc

    monkeypatch.setattr(Task, "_invoke_guardrail_function", reworded)
    server.scripts = {
        "worker": [reply for _ in range(4) for reply in tool_then(GOOD)],
        "guardrail": [verdict(False, f"still wrong {n}") for n in range(4)],
    }
    ctx = make_context(server, tmp_path / "run", "guardrail")
    run(ctx)
    events = finish(ctx)
    (escalation,) = kinds(events, "escalation")
    assert escalation.data.message == "guardrail gave up on this output"
    assert (escalation.data.retry_count, escalation.data.max_retries) == (3, 3)
    assert events[-1].data.status == "task_failed"
    assert not kinds(events, "run_error", "artifact")


def test_I34_an_exception_with_no_exhausting_outcome_before_it_is_a_run_error(
    server: ScriptedServer, tmp_path: Path
) -> None:
    # The worker's second model call finds its script exhausted: HTTP 500, not a guardrail.
    server.scripts = {"worker": [{"tool_calls": [("record_lookup", {"record": "R-7"})]}]}
    ctx = make_context(server, tmp_path / "run", "guardrail")
    with pytest.raises(Exception) as raised:
        run(ctx)
    events = finish(ctx)
    assert is_infrastructure_error(raised.value)
    assert not kinds(events, "escalation", "run_end", "artifact")


def test_I33_a_capped_crewai_worker_answers_on_crewais_final_call_and_the_cap_is_recorded(
    server: ScriptedServer, tmp_path: Path
) -> None:
    looping: list[Reply] = [
        {"tool_calls": [("record_lookup", {"record": "R-7"})]} for _ in range(MAX_AGENT_ITERATIONS)
    ]
    server.scripts = {
        "worker": [*looping, {"content": GOOD}],
        "reviewer": [{"content": APPROVE}],
    }
    ctx = make_context(server, tmp_path / "run")
    run(ctx)
    events = finish(ctx)
    requests = server.requests_of("worker")
    assert len(requests) == MAX_AGENT_ITERATIONS + 1
    assert all(r.get("tools") for r in requests[:-1]) and "tools" not in requests[-1]
    (cap,) = kinds(events, "cap")
    assert (cap.data.cap, cap.data.limit, cap.data.setting, cap.data.ending) == (
        "worker_model_calls", MAX_AGENT_ITERATIONS, "max_iter", "forced_final_answer"
    )
    worker_calls = [e for e in kinds(events, "model_call") if e.component == "worker"]
    assert cap.seq > worker_calls[-1].seq
    assert kinds(events, "agent_output")[0].text == GOOD
    assert ctx.reviewer_drafts == [(0, GOOD)]


def test_I33_a_crewai_worker_within_its_cap_records_no_cap(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.scripts = {"worker": tool_then(GOOD), "reviewer": [{"content": APPROVE}]}
    ctx = make_context(server, tmp_path / "run")
    run(ctx)
    assert not kinds(finish(ctx), "cap")


def test_S5_crewai_exhaustion_message_pattern_matches_crewai_source() -> None:
    import inspect

    from crewai.task import Task

    source = inspect.getsource(Task._invoke_guardrail_function)
    assert (
        'f"Task failed {guardrail_name} validation after {self.guardrail_max_retries} retries. "'
        in source
    )
    assert parse_exhaustion(
        "Task failed guardrail 1 validation after 3 retries. Last error: x\ny"
    ) == (
        1,
        3,
        "x\ny",
    )
    assert parse_exhaustion("Task failed guardrail validation after 3 retries. Last error: e") == (
        None,
        3,
        "e",
    )
    assert parse_exhaustion("Connection error.") is None


def test_S5_crewai_guardrail_retry_only_while_retry_count_below_max() -> None:
    def events_for(success: bool, retry_count: int) -> list[str]:
        outcome = GuardrailOutcome(1, "llm", success, retry_count, "" if success else "bad")
        return [kind for kind, *_ in guardrail_outcome_events(outcome, 3)]

    assert events_for(False, 0) == ["guardrail", "retry"]
    assert events_for(False, 2) == ["guardrail", "retry"]
    assert events_for(False, 3) == ["guardrail"]
    assert events_for(True, 1) == ["guardrail"]


def test_tool_arguments_schema_follows_the_handle_json_schema() -> None:
    handle = ToolHandle(
        name="write_file",
        description="",
        parameters={
            "type": "object",
            "properties": {"name": {"type": "string"}, "lines": {"type": "integer"}},
            "required": ["name"],
        },
        invoke=lambda arguments: "",
    )
    model = args_model(handle)
    assert model(name="a").model_dump() == {"name": "a", "lines": None}
    assert model(name="a", lines=3).lines == 3  # type: ignore[attr-defined]
    with pytest.raises(ValueError):
        model(lines=3)


# --------------------------------------------------------------------------- scoping, isolation


def test_event_bus_handlers_are_scoped_to_one_run(server: ScriptedServer, tmp_path: Path) -> None:
    from crewai.events import crewai_event_bus
    from crewai.events.types.llm_guardrail_events import LLMGuardrailCompletedEvent
    from crewai.hooks.llm_hooks import get_before_llm_call_hooks

    handlers_before = dict(crewai_event_bus._sync_handlers)
    hooks_before = list(get_before_llm_call_hooks())
    server.scripts = {
        "worker": [*tool_then("no result line"), *tool_then(GOOD)],
        "guardrail": [verdict(True)],
        "reviewer": [{"content": APPROVE}],
    }
    first = make_context(server, tmp_path / "first", "guardrail")
    run(first)
    first_events = finish(first)
    assert dict(crewai_event_bus._sync_handlers) == handlers_before
    assert list(get_before_llm_call_hooks()) == hooks_before
    assert LLMGuardrailCompletedEvent not in crewai_event_bus._sync_handlers or (
        crewai_event_bus._sync_handlers[LLMGuardrailCompletedEvent]
        == handlers_before.get(LLMGuardrailCompletedEvent)
    )

    server.scripts = {"worker": tool_then(GOOD), "reviewer": [{"content": APPROVE}]}
    second = make_context(server, tmp_path / "second", "default")
    run(second)
    second_events = finish(second)
    assert len(kinds(first_events, "guardrail")) == 3
    assert not kinds(second_events, "guardrail", "retry")


def test_adapter_registry_resolves_crewai_to_this_module() -> None:
    assert get_adapter("crewai") is run


_ISOLATION_SCRIPT = """
import json
import sys
from pathlib import Path

hosts = set()

def audit(event, args):
    if event == "socket.connect" and isinstance(args[1], tuple):
        hosts.add(str(args[1][0]))
    elif event == "socket.getaddrinfo":
        hosts.add(str(args[0]))

sys.addaudithook(audit)
sys.path.insert(0, {tests_dir!r})
import loopback
import test_crewai_pipeline as t
handle = loopback.start_server()
handle.state.scripts = {{
    "worker": [*t.tool_then("no result"), *t.tool_then(t.GOOD)],
    "guardrail": [t.verdict(True)],
    "reviewer": [{{"content": t.APPROVE}}],
}}
ctx = t.make_context(handle.state, Path({run_dir!r}), "guardrail")
t.run(ctx)
ctx.trace.finish()
handle.close()
print("HOSTS=" + json.dumps(sorted(hosts)))
"""


def _files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.slow
def test_a_run_writes_nothing_outside_its_run_dir_and_talks_only_to_loopback(
    tmp_path: Path,
) -> None:
    home, tmp, cwd = tmp_path / "home", tmp_path / "tmp", tmp_path / "cwd"
    for d in (home, tmp, cwd):
        d.mkdir()
    run_dir = tmp_path / "runs" / "cell"
    script = _ISOLATION_SCRIPT.format(tests_dir=str(Path(__file__).parent), run_dir=str(run_dir))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREWAI", "XDG_", "OTEL"))}
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (hosts_line,) = [line for line in done.stdout.splitlines() if line.startswith("HOSTS=")]
    assert json.loads(hosts_line.removeprefix("HOSTS=")) == ["127.0.0.1"]
    assert _files_under(home) == set()
    assert _files_under(tmp) == set()
    assert _files_under(cwd) == set()
    assert (run_dir / "events.jsonl").exists()
    assert (run_dir / "crewai_state").is_dir()
    events = list(read_trace(run_dir).events)
    assert [e.data.success for e in kinds(events, "guardrail")] == [False, True, True]


def test_RUN_ERROR_a_failed_guardrail_model_call_is_a_run_error_not_a_guardrail_reject(
    server: ScriptedServer, tmp_path: Path
) -> None:
    # The guardrail agent has no script: the server answers HTTP 500 to it.
    server.scripts = {"worker": tool_then(GOOD), "reviewer": [{"content": APPROVE}]}
    ctx = make_context(server, tmp_path / "run", "guardrail")
    with pytest.raises(Exception) as raised:
        run(ctx)
    events = finish(ctx)
    assert is_infrastructure_error(raised.value)
    assert [(e.data.guardrail_kind, e.data.success) for e in kinds(events, "guardrail")] == [
        ("contract", True)
    ]
    assert not kinds(events, "retry", "escalation", "run_end", "artifact")


def test_infrastructure_errors_are_told_apart_from_model_answers() -> None:
    import httpx
    import openai

    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    try:
        try:
            raise openai.APIConnectionError(request=request)
        except openai.APIError as inner:
            raise ValueError("wrapped by the provider") from inner
    except ValueError as outer:
        assert is_infrastructure_error(outer)
    assert not is_infrastructure_error(ValueError("The guardrail result is not a valid model"))


# --------------------------------------------------------------------------- real cells


@dataclass
class RealCells:
    """run_cell against a keyless gateway serving the embedded model."""

    out_dir: Path
    gateway_url: str

    def run(self, persona: str, config: str, operator: str | None, task: str, tag: str = "") -> Any:
        from pytest_sabot.core.records import cell_dir
        from pytest_sabot.harness.run import RunSettings, run_cell
        from pytest_sabot.matrix.cells import load_wave

        spec, _ = load_wave(1, REPO)
        cell = Cell(
            wave=1,
            framework="crewai",
            config=config,
            operator=operator,
            task=task,  # type: ignore[arg-type]
            seed=11,
        )
        out = self.out_dir / f"{persona.replace(':', '_')}{tag}"
        settings = RunSettings(
            root=REPO, out_dir=out, gateway_url=self.gateway_url, model=persona, timeout_s=600
        )
        outcome = run_cell(cell, spec, settings)
        return outcome, list(read_trace(cell_dir(out, cell.id)).events)


@pytest.fixture(scope="module")
def real_cells(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCells]:
    from pytest_sabot.gateway import start_gateway

    gateway = start_gateway()
    try:
        yield RealCells(tmp_path_factory.mktemp("cells"), gateway.url)
    finally:
        gateway.close()


def _acts_after_injection(events: list[Any], config: str) -> list[tuple[str, str]]:
    from pytest_sabot.core.models.trace import Trace

    injection = next((e.seq for e in events if e.kind == "injection"), 0)
    mapping = load_mapping(REPO, "crewai", "v0.1.3")
    found = find_acts(Trace(events=events), mapping, config, injection, None)
    return [(a.act, a.row) for a in found if a.after_injection]


@pytest.mark.slow
@pytest.mark.parametrize("task", ["T1", "T2", "T3", "T4", "T5"])
@pytest.mark.parametrize("config", ["default", "guardrail"])
def test_S3_crewai_baseline_passes_under_sim_vigilant(
    real_cells: RealCells, config: str, task: str
) -> None:
    outcome, events = real_cells.run("sim:vigilant", config, None, task)
    assert outcome.error is None
    assert outcome.passed, outcome.pass_reason
    assert events[-1].kind == "run_end" and events[-1].data.status == "completed"
    assert any(e.kind == "review" for e in events)
    if config == "guardrail":
        assert {e.data.guardrail_kind for e in events if e.kind == "guardrail"} == {
            "contract",
            "llm",
        }


@pytest.mark.slow
def test_S5_crewai_vigilant_guardrail_config_rejects_O1(real_cells: RealCells) -> None:
    outcome, events = real_cells.run("sim:vigilant", "guardrail", "O1", "T1")
    assert outcome.error is None
    acts = _acts_after_injection(events, "guardrail")
    assert ("reject", "reject-reviewer") in acts
    assert any(e.kind == "retry" and e.data.source == "revise" for e in events)


@pytest.mark.slow
def test_S5_crewai_credulous_never_rejects_O1(real_cells: RealCells) -> None:
    outcome, events = real_cells.run("sim:credulous", "guardrail", "O1", "T1")
    assert outcome.error is None
    assert _acts_after_injection(events, "guardrail") == []
    assert all(e.data.success for e in events if e.kind == "guardrail")


@pytest.mark.slow
def test_S5_crewai_real_guardrail_exhaustion_is_escalate_and_task_failed(
    real_cells: RealCells,
) -> None:
    # Under O4 the weak worker keeps breaking T2's published contract: the contract
    # guardrail fails four times and CrewAI gives up.
    outcome, events = real_cells.run("sim:vigilant", "guardrail", "O4", "T2")
    assert outcome.error is None and outcome.passed is False
    assert not any(e.kind == "run_error" for e in events)
    (escalation,) = [e for e in events if e.kind == "escalation"]
    assert parse_exhaustion(escalation.data.message) is not None
    assert [e.data.status for e in events if e.kind == "run_end"] == ["task_failed"]
    assert ("escalate", "escalate-exhausted") in _acts_after_injection(events, "guardrail")


def _comparable(event: Any) -> dict[str, Any]:
    raw = event.model_dump(mode="json")
    raw.pop("t")
    for timing in ("latency_ms",):
        raw["data"].pop(timing, None)
    return raw


@pytest.mark.slow
def test_crewai_cell_trace_is_deterministic_timing_aside(real_cells: RealCells) -> None:
    _, first = real_cells.run("sim:vigilant", "guardrail", "O1", "T1", tag="-a")
    _, second = real_cells.run("sim:vigilant", "guardrail", "O1", "T1", tag="-b")
    assert [_comparable(e) for e in first] == [_comparable(e) for e in second]


def test_isolation_points_crewai_paths_into_the_run_dir_and_restores_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from pytest_sabot.adapters.crewai import _env as _crewai_env

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CREWAI_STORAGE_DIR", raising=False)
    tempdir_before = tempfile.tempdir
    with _crewai_env.isolated(tmp_path / "run") as state:
        assert state == (tmp_path / "run" / _crewai_env.STATE_DIR).resolve()
        for name in ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "CREWAI_STORAGE_DIR"):
            assert Path(os.environ[name]).is_relative_to(state)
        assert Path(tempfile.gettempdir()).is_relative_to(state)
        for name, value in _crewai_env.SWITCHES.items():
            assert os.environ[name] == value
    assert os.environ["HOME"] == str(tmp_path / "home")
    assert "CREWAI_STORAGE_DIR" not in os.environ
    assert tempfile.tempdir == tempdir_before


def test_importing_the_adapter_does_not_import_crewai() -> None:
    code = (
        "import sys, pytest_sabot, pytest_sabot.adapters.crewai.pipeline\n"
        "assert 'crewai' not in sys.modules, 'crewai imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
