"""The Microsoft agent-framework pipeline, a candidate row (SPEC.md S5, S8, S10.6; I61-I63).

Two kinds of test. The first half runs the real agent-framework 1.23 / orchestrations 1.4
machinery over real HTTP against a loopback OpenAI-compatible server scripted per scenario
(it stands in for the gateway), with a small test-local implementation of the harness
contract that writes a real trace. The second half runs whole cells of the registered
candidate matrix (cells/agent-framework.yaml) through ``run_cell``: the harness context,
the gateway on 127.0.0.1 and the embedded keyless model, then scores them with the
published mapping (mappings/agent_framework.yaml).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

import pytest
from loopback import REJECTION_LAYOUTS, emit_run_start, record_handoff

from pytest_sabot.core.context import WORKER_MODEL_CALL_CAP, Messages, ToolHandle
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.trace_io import TraceWriter
from pytest_sabot.core.verdict_token import strip_flags_head

pytest.importorskip("agent_framework_orchestrations")

from pytest_sabot.adapters.agent_framework import _magentic as magentic
from pytest_sabot.adapters.agent_framework import pipeline
from pytest_sabot.gateway import loopback

ROOT = Path(__file__).resolve().parents[2]
ToolRole = Literal["data", "check", "write"]

LEDGER_MARK = "Is the request fully satisfied?"
FACTS_MARK = "please answer the following pre-survey"
PLAN_MARK = "please devise a short bullet-point plan"
FACTS_UPDATE_MARK = "Please rewrite the following fact sheet"
PLAN_UPDATE_MARK = "Please briefly explain what went wrong on this last run"
FINAL_MARK = "provide the final answer to the original request"
STALL_LINE = "Magentic Orchestrator: Stalling detected after 4 rounds"


def ledger(
    *,
    satisfied: bool = False,
    satisfied_reason: str = "Not yet: the record has not been produced.",
    progress: bool = True,
    progress_reason: str = "The worker is producing the record.",
    loop: bool = False,
    loop_reason: str = "No repetition so far.",
    instruction: str = "Produce the acceptance record.",
) -> dict[str, Any]:
    return {
        "is_request_satisfied": {"reason": satisfied_reason, "answer": satisfied},
        "is_in_loop": {"reason": loop_reason, "answer": loop},
        "is_progress_being_made": {"reason": progress_reason, "answer": progress},
        "next_speaker": {"reason": "Only one worker.", "answer": "worker"},
        "instruction_or_question": {"reason": "Next step.", "answer": instruction},
    }


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


@dataclass
class Scenario:
    """What the stub answers, per agent. Ledgers are served in order; the last repeats."""

    worker_drafts: list[str] = field(default_factory=lambda: ['{"gain": 47.1}'])
    reviewer_replies: list[str] = field(default_factory=lambda: ["Fine.\nVERDICT: APPROVE"])
    ledgers: list[dict[str, Any]] = field(default_factory=list)
    final_answer: str = '{"gain": 47.1}'
    fail_agents: set[str] = field(default_factory=set)
    fail_ledger_call: int | None = None  # 1-based progress-ledger call answered with a 500
    worker_tool_calls: int = 1  # model calls of a worker pass that ask for a tool


def _chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat completion as the stream of chunks an OpenAI-compatible server sends."""
    message = completion["choices"][0]["message"]
    base = {k: completion[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    delta: dict[str, Any] = {"role": "assistant"}
    if message.get("content") is not None:
        delta["content"] = message["content"]
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": n, **call} for n, call in enumerate(message["tool_calls"])]
    finish = completion["choices"][0]["finish_reason"]
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": completion["usage"]},
    ]


def serve_chat(
    answer: Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]],
) -> ThreadingHTTPServer:
    """Serve chat completions on 127.0.0.1, as JSON or, when the body asks, as SSE."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            status, payload = answer(self.path, body)
            if status == 200 and body.get("stream"):
                data = "".join(f"data: {json.dumps(c)}\n\n" for c in _chunks(payload))
                raw = (data + "data: [DONE]\n\n").encode()
                kind = "text/event-stream"
            else:
                raw, kind = json.dumps(payload).encode(), "application/json"
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


class ModelStub:
    """A loopback OpenAI-compatible chat-completions server: /<agent>/v1/chat/completions
    (streamed when the request asks: agent-framework streams a Magentic participant)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.exchanges: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._ledgers = 0
        self.server = serve_chat(
            lambda path, body: self.answer(path.strip("/").split("/")[0], body)
        )
        self.port = self.server.server_address[1]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def requests_of(self, agent: str) -> list[dict[str, Any]]:
        with self._lock:
            return [body for name, body in self.exchanges if name == agent]

    def answer(self, agent: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.exchanges.append((agent, body))
            index = self._counts.get(agent, 0)
            self._counts[agent] = index + 1
        if agent in self.scenario.fail_agents:
            return 500, {"error": {"message": "upstream unavailable", "type": "server_error"}}
        messages = body["messages"]
        last_user = next((_text(m) for m in reversed(messages) if m["role"] == "user"), "")
        if agent == "orchestrator":
            if LEDGER_MARK in last_user:
                with self._lock:
                    self._ledgers += 1
                    served = self._ledgers
                if served == self.scenario.fail_ledger_call:
                    return 500, {"error": {"message": "ledger call refused", "type": "x"}}
                ledgers = self.scenario.ledgers
                reply = json.dumps(ledgers[min(served - 1, len(ledgers) - 1)])
                return 200, self._completion(body, reply, index)
            return 200, self._completion(body, self._orchestrate(last_user), index)
        if agent == "worker":
            return 200, self._worker(body, index)
        turns = len(self.requests_of(agent)) - 1
        replies = self.scenario.reviewer_replies
        return 200, self._completion(body, replies[min(turns, len(replies) - 1)], index)

    def _orchestrate(self, prompt: str) -> str:
        if FACTS_UPDATE_MARK in prompt:
            return "1. GIVEN OR VERIFIED FACTS\n- updated after a stall"
        if PLAN_UPDATE_MARK in prompt:
            return "- Root cause: conflicting values.\n- Ask the worker to re-read the tool."
        if FACTS_MARK in prompt:
            return "1. GIVEN OR VERIFIED FACTS\n- the bench sheet"
        if PLAN_MARK in prompt:
            return "- Ask the worker for the record."
        if FINAL_MARK in prompt:
            return self.scenario.final_answer
        return "unrecognised orchestrator prompt"

    def _worker(self, body: dict[str, Any], index: int) -> dict[str, Any]:
        messages = body["messages"]
        tools = body.get("tools") or []
        since_user = 0
        for m in reversed(messages):
            if m["role"] == "user":
                break
            since_user += m["role"] == "tool"
        wants_tool = tools and body.get("tool_choice") != "none"
        if wants_tool and since_user < self.scenario.worker_tool_calls:
            call = {
                "id": f"call_{index}",
                "type": "function",
                "function": {
                    "name": tools[0]["function"]["name"],
                    "arguments": json.dumps({"sensor_id": "TS-0412"}),
                },
            }
            return self._completion(body, None, index, tool_calls=[call])
        drafts = self.scenario.worker_drafts
        rounds = sum(
            1 for m in messages if m["role"] in ("user", "system") and "FEEDBACK" in _text(m)
        )
        return self._completion(body, drafts[min(rounds, len(drafts) - 1)], index)

    @staticmethod
    def _completion(
        body: dict[str, Any],
        content: str | None,
        index: int,
        tool_calls: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


class LocalContext:
    """A small implementation of the RunContext contract around a real TraceWriter."""

    def __init__(
        self,
        run_dir: Path,
        stub: ModelStub,
        config: str,
        alter_handoff: Callable[[str], str] | None = None,
    ) -> None:
        self.cell = Cell(
            wave=101,
            framework="agent_framework",
            config=config,  # type: ignore[arg-type]
            operator=None,
            task="T1",
            seed=11,
        )
        self.run_dir = run_dir
        self.trace = TraceWriter(run_dir)
        self.flags_protocol = True
        self.model_name = "stub-model"
        self.api_key = "local-token"
        self.workspace: dict[str, str] = {}
        self.worker_prompts: list[tuple[int, str]] = []
        self._stub = stub
        self._synced = 0
        self._calls: dict[str, int] = {}
        self._alter = alter_handoff
        self._tool_calls = 0
        emit_run_start(self.trace, self.cell, rules="v0.2.1", model="stub-model")

    def base_url(self, agent: str) -> str:
        return f"http://127.0.0.1:{self._stub.port}/{agent}/v1"

    def http_client(self) -> Any:
        return loopback.sync_client()

    def http_async_client(self) -> Any:
        return loopback.async_client()

    def _tool(
        self,
        name: str,
        role: ToolRole,
        properties: dict[str, Any],
        fn: Callable[[dict[str, Any]], str],
        artifact_arguments: Callable[[str], dict[str, Any]] | None = None,
    ) -> ToolHandle:
        def invoke(arguments: dict[str, Any]) -> str:
            self._tool_calls += 1
            call_id = f"{name}#{self._tool_calls}"
            self.trace.emit("tool_call", "worker", tool=name, call_id=call_id, arguments=arguments)
            observation = fn(arguments)
            self.trace.emit("tool_result", "tool", observation, tool=name, call_id=call_id)
            return observation

        schema = {"type": "object", "properties": properties, "required": list(properties)}
        return ToolHandle(
            name=name,
            description=f"{name} tool",
            parameters=schema,
            invoke=invoke,
            role=role,
            artifact_arguments=artifact_arguments,
        )

    @property
    def tools(self) -> list[ToolHandle]:
        def write(arguments: dict[str, Any]) -> str:
            self.workspace[arguments["name"]] = arguments["content"]
            return f"write_file: wrote {arguments['name']}"

        return [
            self._tool(
                "calibration_lookup",
                "data",
                {"sensor_id": {"type": "string"}},
                lambda a: f"sensor {a.get('sensor_id')}: gain factor 47.1",
            ),
            self._tool(
                "validate_records",
                "check",
                {"record": {"type": "string"}},
                lambda a: "validate_records: 3 fields checked, all present",
                lambda text: {"record": text},
            ),
            self._tool(
                "write_file",
                "write",
                {"name": {"type": "string"}, "content": {"type": "string"}},
                write,
                lambda text: {"name": "output.json", "content": text},
            ),
        ]

    def worker_prompt(self, round: int, feedback: str = "") -> Messages:
        self.worker_prompts.append((round, feedback))
        user = "=== TASK ===\nT1 Bench acceptance record\n=== BRIEF ===\nExtract the record."
        if feedback:
            user += f"\n=== FEEDBACK ===\n{feedback}"
        return Messages(system="=== ROLE ===\nworker", user=user)

    def handoff(self, sender: str, receiver: str, text: str) -> str:
        delivered = self._alter(text) if self._alter else text
        return record_handoff(self.trace, sender, receiver, delivered)

    def reviewer_prompt(self, delivered: str, round: int) -> Messages:
        return Messages(
            system="=== ROLE ===\nreviewer",
            user=f"=== DRAFT ===\n{delivered}\n=== ROUND ===\n{round}\n=== PROTOCOL ===\n"
            "End with VERDICT: APPROVE or VERDICT: REJECT - <reason>.",
        )

    def guardrail_text(self) -> str:
        return ""

    def check_contract(self, artifact: str) -> list[str]:
        return []

    def magentic_task(self) -> str:
        return "=== TASK ===\nT1\n=== CONTRACT ===\nLine 1 is the FLAGS line, then the record."

    def sync_model_calls(self) -> None:
        exchanges = self._stub.exchanges[self._synced :]
        self._synced += len(exchanges)
        for agent, body in exchanges:
            index = self._calls.get(agent, 0)
            self._calls[agent] = index + 1
            self.trace.emit(
                "model_call",
                agent,
                call_index=index,
                model_requested=body["model"],
                model_served=body["model"],
            )

    def emit(self, text: str) -> None:
        flags, body = strip_flags_head(text)
        self.trace.emit("artifact", "pipeline", body, name="output.json", flags_line=flags)

    def events(self) -> list[Any]:
        return self.trace.events()


@pytest.fixture
def make_run(tmp_path: Path) -> Iterator[Callable[..., tuple[LocalContext, ModelStub]]]:
    stubs: list[ModelStub] = []

    def _make(
        scenario: Scenario, config: str, name: str = "run", **kwargs: Any
    ) -> tuple[LocalContext, ModelStub]:
        stub = ModelStub(scenario)
        stubs.append(stub)
        return LocalContext(tmp_path / name, stub, config, **kwargs), stub

    yield _make
    for stub in stubs:
        stub.close()


def kinds(ctx: LocalContext, kind: str) -> list[Any]:
    return [e for e in ctx.events() if e.kind == kind]


# --------------------------------------------------------------------------- default config


@pytest.mark.slow
def test_S5_default_reviewer_approve_emits_the_delivered_draft(make_run: Any) -> None:
    ctx, _ = make_run(Scenario(), "default")
    pipeline.run(ctx)

    (draft,) = kinds(ctx, "agent_output")
    assert (draft.component, draft.data.stage, draft.text) == ("worker", "worker", '{"gain": 47.1}')
    (review,) = kinds(ctx, "review")
    assert (review.component, review.text) == ("reviewer", "Fine.\nVERDICT: APPROVE")
    assert kinds(ctx, "retry") == []
    assert [e.text for e in kinds(ctx, "artifact")] == ['{"gain": 47.1}']
    assert ctx.worker_prompts == [(0, "")]
    # The worker's tool call went through the harness's handle, after the model call that
    # asked for it.
    (call,) = kinds(ctx, "tool_call")
    first_model_call = kinds(ctx, "model_call")[0]
    assert first_model_call.component == "worker" and first_model_call.seq < call.seq


@pytest.mark.slow
def test_S5_default_reviewer_reject_routes_to_revise_with_the_reason(make_run: Any) -> None:
    reason = "gain_factor: the draft has 74.1 but the bench sheet states 47.1"
    scenario = Scenario(
        worker_drafts=['{"gain": 74.1}', '{"gain": 47.1}'],
        reviewer_replies=[f"Conflict.\nVERDICT: REJECT - {reason}", "VERDICT: APPROVE"],
    )
    ctx, _ = make_run(scenario, "default")
    pipeline.run(ctx)

    (retry,) = kinds(ctx, "retry")
    assert (retry.component, retry.data.source, retry.data.reason) == ("worker", "revise", reason)
    rejection = f"Conflict.\nVERDICT: REJECT - {reason}"
    assert retry.data.feedback == rejection
    assert ctx.worker_prompts == [(0, ""), (1, rejection)]
    reviews = kinds(ctx, "review")
    assert [r.data.round for r in reviews] == [0, 1]
    assert reviews[0].seq < retry.seq < reviews[1].seq
    outputs = kinds(ctx, "agent_output")
    assert [(o.data.stage, o.data.round) for o in outputs] == [("worker", 0), ("revise", 1)]
    assert [e.text for e in kinds(ctx, "artifact")] == ['{"gain": 47.1}']


@pytest.mark.parametrize("layout", sorted(REJECTION_LAYOUTS))
def test_S5_default_revise_carries_the_rejection_text_in_every_layout(
    make_run: Any, layout: str
) -> None:
    """Issue 22 item 5: the reviewer's rejection text, whatever the verdict line's layout;
    the recorded reason is the standard's parse."""
    reply, parsed = REJECTION_LAYOUTS[layout]
    scenario = Scenario(worker_drafts=['{"gain": 74.1}', '{"gain": 47.1}'],
                        reviewer_replies=[reply, "VERDICT: APPROVE"])
    ctx, _ = make_run(scenario, "default")
    pipeline.run(ctx)
    (retry,) = kinds(ctx, "retry")
    assert (retry.data.reason, retry.data.feedback) == (parsed, reply)
    assert ctx.worker_prompts == [(0, ""), (1, reply)]


def test_S5_default_one_revise_loop_only_a_second_reject_still_emits(make_run: Any) -> None:
    scenario = Scenario(
        worker_drafts=["first", "second"],
        reviewer_replies=["VERDICT: REJECT - one", "VERDICT: REJECT - two"],
    )
    ctx, _ = make_run(scenario, "default")
    pipeline.run(ctx)

    assert len(kinds(ctx, "retry")) == 1
    assert len(kinds(ctx, "review")) == 2
    assert [e.text for e in kinds(ctx, "artifact")] == ["second"]


def test_S5_6_3_no_verdict_token_is_no_reject_and_no_revise(make_run: Any) -> None:
    scenario = Scenario(reviewer_replies=["This looks off to me, the gain seems wrong."])
    ctx, _ = make_run(scenario, "default")
    pipeline.run(ctx)

    assert kinds(ctx, "retry") == []
    assert len(kinds(ctx, "artifact")) == 1


def test_S3_handoff_delivers_the_altered_text_to_the_reviewer_and_the_artifact(
    make_run: Any,
) -> None:
    ctx, stub = make_run(Scenario(), "default", alter_handoff=lambda t: t.replace("47.1", "41.7"))
    pipeline.run(ctx)

    reviewer_request = stub.requests_of("reviewer")[0]["messages"]
    assert any('{"gain": 41.7}' in _text(m) for m in reviewer_request)
    assert kinds(ctx, "artifact")[0].text == '{"gain": 41.7}'


def test_S8_4_no_temperature_sent_and_the_model_name_passed_through(make_run: Any) -> None:
    for config in ("default", "guardrail"):
        scenario = Scenario(ledgers=[ledger(), ledger(satisfied=True)])
        ctx, stub = make_run(scenario, config, name=config)
        pipeline.run(ctx)
        assert {agent for agent, _ in stub.exchanges} >= {"worker"}
        for _, body in stub.exchanges:
            assert "temperature" not in body
            assert body["model"] == "stub-model"


def test_S8_12_the_gateway_is_the_only_retry_layer(make_run: Any) -> None:
    ctx, stub = make_run(Scenario(fail_agents={"reviewer"}), "default")
    with pytest.raises(Exception, match=r"upstream unavailable|500"):
        pipeline.run(ctx)
    assert len(stub.requests_of("reviewer")) == 1
    assert kinds(ctx, "artifact") == []


def test_I33_a_capped_worker_answers_on_agent_frameworks_call_without_tools(
    make_run: Any,
) -> None:
    scenario = Scenario(worker_tool_calls=100)
    ctx, stub = make_run(scenario, "default")
    pipeline.run(ctx)

    worker_requests = stub.requests_of("worker")
    assert len(worker_requests) == WORKER_MODEL_CALL_CAP + 1
    assert [b.get("tool_choice") for b in worker_requests[:-1]] == ["auto"] * 8
    assert worker_requests[-1]["tool_choice"] == "none"
    (cap,) = kinds(ctx, "cap")
    assert (cap.component, cap.data.cap, cap.data.limit, cap.data.setting, cap.data.ending) == (
        "worker",
        "worker_model_calls",
        8,
        "max_iterations",
        "forced_final_answer",
    )
    (draft,) = kinds(ctx, "agent_output")
    last_worker_call = [e for e in kinds(ctx, "model_call") if e.component == "worker"][-1]
    assert last_worker_call.seq < cap.seq < draft.seq
    assert draft.text == '{"gain": 47.1}'


def test_I33_a_worker_within_its_cap_records_no_cap(make_run: Any) -> None:
    ctx, _ = make_run(Scenario(worker_tool_calls=WORKER_MODEL_CALL_CAP - 1), "default")
    pipeline.run(ctx)
    assert kinds(ctx, "cap") == []


def test_the_default_config_is_an_agent_framework_workflow_of_five_executors(
    make_run: Any,
) -> None:
    from agent_framework import Agent, Workflow

    ctx, _ = make_run(Scenario(), "default")
    stub_client = pipeline._chat_client(ctx, "worker", None, worker=True)
    agent = Agent(stub_client, name="worker")
    workflow = pipeline.build_default_workflow(ctx, agent, agent)
    assert isinstance(workflow, Workflow)
    assert sorted(workflow.executors) == ["emit", "load", "review", "revise", "worker"]


# --------------------------------------------------------------------------- Magentic


def test_S10_6_magentic_happy_path_final_answer_is_the_artifact(make_run: Any) -> None:
    scenario = Scenario(
        worker_drafts=['{"gain": 47.1}'],
        ledgers=[ledger(), ledger(satisfied=True, satisfied_reason="done")],
        final_answer='FLAGS: none\n{"gain": 47.1}',
    )
    ctx, stub = make_run(scenario, "guardrail")
    pipeline.run(ctx)

    ledgers = kinds(ctx, "ledger")
    assert [e.data.ledger["is_request_satisfied"]["answer"] for e in ledgers] == [False, True]
    assert json.loads(ledgers[0].text) == ledgers[0].data.ledger
    plan = [e for e in kinds(ctx, "agent_output") if e.data.stage == "plan"]
    assert len(plan) == 1 and "T1" in plan[0].text
    assert kinds(ctx, "replan") == [] and kinds(ctx, "stop_reason") == []
    (artifact,) = kinds(ctx, "artifact")
    assert (artifact.text, artifact.data.flags_line) == ('{"gain": 47.1}', "FLAGS: none")
    (check,) = kinds(ctx, "surface_check")
    assert (check.data.mandated_count, check.data.other_count, check.data.agree) == (0, 0, True)
    assert stub.requests_of("orchestrator")[0]["model"] == "stub-model"


def test_S10_6_I61_magentic_check_write_and_handoff_land_after_the_team_run(
    make_run: Any,
) -> None:
    scenario = Scenario(ledgers=[ledger(), ledger(satisfied=True)], final_answer="FLAGS: none\nR")
    ctx, stub = make_run(scenario, "guardrail", alter_handoff=lambda t: t + "!")
    pipeline.run(ctx)

    offered = {
        t["function"]["name"] for b in stub.requests_of("worker") for t in b.get("tools", [])
    }
    assert offered == {"calibration_lookup"}
    final = [e for e in kinds(ctx, "agent_output") if e.data.stage == "final"]
    (handoff,) = kinds(ctx, "message")
    assert (handoff.data.sender, handoff.data.receiver) == ("orchestrator", "emitter")
    assert final[0].seq < handoff.seq
    after = [e.data.tool for e in kinds(ctx, "tool_call") if e.seq > handoff.seq]
    assert after == ["validate_records", "write_file"]
    assert ctx.workspace == {"output.json": "R!"}  # the FLAGS head line is not committed
    assert kinds(ctx, "artifact")[0].text == "R!"


def test_S5_magentic_stall_replan_is_recorded_with_the_logged_line_and_ledger_reasons(
    make_run: Any,
) -> None:
    why = "The tool says gain 74.1 but the bench sheet says 47.1; no progress."
    stalled = ledger(progress=False, progress_reason=why)
    scenario = Scenario(ledgers=[stalled] * 4 + [ledger(satisfied=True)])
    ctx, stub = make_run(scenario, "guardrail")
    pipeline.run(ctx)

    (replan,) = kinds(ctx, "replan")
    assert replan.data.log_line == STALL_LINE
    assert magentic.STALL_LINE.match(replan.data.log_line)
    assert replan.data.reason.count(why) == 4 and "74.1" in replan.data.reason
    ledgers = kinds(ctx, "ledger")
    assert ledgers[3].seq < replan.seq < ledgers[4].seq
    replanned = [e for e in kinds(ctx, "agent_output") if e.data.stage == "replan"]
    assert len(replanned) == 1 and replanned[0].seq > replan.seq
    prompts = [_text(b["messages"][-1]) for b in stub.requests_of("orchestrator")]
    assert any(FACTS_UPDATE_MARK in p for p in prompts)
    assert any(PLAN_UPDATE_MARK in p for p in prompts)
    (check,) = kinds(ctx, "surface_check")
    assert (check.data.mandated_count, check.data.other_count, check.data.agree) == (1, 1, True)


def test_I62_agent_framework_replans_above_max_stall_count_not_at_it(make_run: Any) -> None:
    """Three stalls in a row (the standard's Magentic-One re-plans at the third) are not a
    re-plan in agent-framework: its count must go above max_stall_count."""
    stalled = ledger(progress=False, progress_reason="stuck")
    scenario = Scenario(ledgers=[stalled] * 3 + [ledger(satisfied=True)])
    ctx, _ = make_run(scenario, "guardrail")
    pipeline.run(ctx)
    assert pipeline.MAX_STALL_COUNT == 3
    assert kinds(ctx, "replan") == []


@pytest.mark.slow
def test_I62_the_round_limit_is_a_cap_the_framework_message_a_stop_reason_and_no_artifact(
    make_run: Any,
) -> None:
    scenario = Scenario(ledgers=[ledger()], final_answer="never asked for")
    ctx, stub = make_run(scenario, "guardrail")
    pipeline.run(ctx)

    assert len(kinds(ctx, "ledger")) == pipeline.MAX_ROUND_COUNT
    (cap,) = kinds(ctx, "cap")
    assert (cap.component, cap.data.cap, cap.data.limit, cap.data.setting, cap.data.ending) == (
        "orchestrator",
        "team_turns",
        20,
        "max_round_count",
        "stopped",
    )
    (stop,) = kinds(ctx, "stop_reason")
    assert stop.text == pipeline.ROUND_LIMIT_TEXT and cap.seq < stop.seq
    ends = kinds(ctx, "run_end")
    assert [(e.data.status, e.text) for e in ends] == [("task_failed", pipeline.ROUND_LIMIT_TEXT)]
    assert kinds(ctx, "artifact") == []
    prompts = [_text(b["messages"][-1]) for b in stub.requests_of("orchestrator")]
    assert not any(FINAL_MARK in p for p in prompts)


def test_I62_the_framework_sets_no_round_limit_of_its_own() -> None:
    import inspect

    from agent_framework_orchestrations import MagenticBuilder, StandardMagenticManager

    builder = inspect.signature(MagenticBuilder).parameters
    manager = inspect.signature(StandardMagenticManager).parameters
    assert builder["max_round_count"].default is None
    assert builder["max_reset_count"].default is None
    assert manager["max_stall_count"].default == pipeline.MAX_STALL_COUNT


def test_I38_a_failed_orchestrator_ledger_call_is_a_run_error_not_a_replan(
    make_run: Any,
) -> None:
    scenario = Scenario(ledgers=[ledger(), ledger(satisfied=True)], fail_ledger_call=2)
    ctx, _ = make_run(scenario, "guardrail")
    with pytest.raises(RuntimeError, match=r"orchestrator failed.*(ledger call refused|500)"):
        pipeline.run(ctx)
    assert kinds(ctx, "replan") == []
    assert kinds(ctx, "artifact") == []


def test_magentic_capped_worker_turn_is_recorded(make_run: Any) -> None:
    scenario = Scenario(ledgers=[ledger(), ledger(satisfied=True)], worker_tool_calls=100)
    ctx, _ = make_run(scenario, "guardrail")
    pipeline.run(ctx)
    (cap,) = kinds(ctx, "cap")
    assert (cap.component, cap.data.cap, cap.data.setting) == (
        "worker",
        "worker_model_calls",
        "max_iterations",
    )


def test_magentic_log_capture_never_leaks_its_handler_or_level(make_run: Any) -> None:
    import logging

    logger = logging.getLogger(magentic.MAGENTIC_LOGGER)
    before = (list(logger.handlers), logger.level, logger.propagate)
    scenario = Scenario(ledgers=[ledger()], fail_agents={"worker"})
    ctx, _ = make_run(scenario, "guardrail")
    with pytest.raises(Exception):  # noqa: B017 - any failure of the team run
        pipeline.run(ctx)
    assert (list(logger.handlers), logger.level, logger.propagate) == before


def test_the_gateway_token_never_reaches_the_trace(make_run: Any) -> None:
    scenario = Scenario(ledgers=[ledger(), ledger(satisfied=True)])
    ctx, _ = make_run(scenario, "guardrail")
    pipeline.run(ctx)
    assert "local-token" not in (ctx.run_dir / "events.jsonl.partial").read_text()


# --------------------------------------------------------------------------- pure reading


def test_S5_stall_follower_mirrors_the_orchestrators_count_and_reasons() -> None:
    follower = magentic.StallFollower(3)
    stalled = ledger(progress=False, progress_reason="a")
    for _ in range(3):
        follower.feed(stalled)
    assert not follower.stalled_out
    follower.feed(ledger())  # progress: one stall off the count and the oldest reason
    follower.feed(ledger(loop=True, loop_reason="b"))
    follower.feed(stalled)
    assert follower.count == 4 and follower.stalled_out
    reason, by_stall = follower.replanned()
    assert by_stall and reason == "no progress: a | no progress: a | in a loop: b | no progress: a"
    assert (follower.count, follower.pending, follower.stall_replans) == (0, [], 1)
    follower.feed(ledger(satisfied=True, progress=False))
    assert follower.count == 0  # a satisfied ledger ends the run, it is no stall


def test_S5_a_replan_the_ledgers_do_not_account_for_is_not_a_stall() -> None:
    follower = magentic.StallFollower(3)
    follower.feed(ledger())
    assert follower.replanned() == ("", False)
    assert follower.stall_replans == 0


# --------------------------------------------------------------------------- registration


def test_adapter_registry_resolves_agent_framework_to_this_module() -> None:
    from pytest_sabot.adapters import get_adapter

    assert get_adapter("agent_framework") is pipeline.run


@pytest.mark.slow
def test_importing_the_plugin_imports_no_agent_framework() -> None:
    code = (
        "import sys, pytest_sabot, pytest_sabot.plugin, pytest_sabot.adapters, "
        "pytest_sabot.matrix.standard, pytest_sabot.matrix.cells\n"
        "found = sorted(m for m in sys.modules if m.startswith('agent_framework'))\n"
        "print(found)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.stdout.strip() == "[]"


_BLOCKER = """
import importlib.abc, sys
class _NoAgentFramework(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0].startswith('agent_framework'):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _NoAgentFramework())
"""


def _without_agent_framework(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_BLOCKER)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}


def test_a_missing_extra_is_named_by_the_adapter_registry(tmp_path: Path) -> None:
    code = (
        "from pytest_sabot.adapters import FrameworkNotInstalled, get_adapter, "
        "missing_framework\n"
        "assert missing_framework('langgraph') is None\n"
        "try:\n    get_adapter('agent_framework')\n"
        "except FrameworkNotInstalled as exc:\n    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=_without_agent_framework(tmp_path),
    )
    assert "pip install 'pytest-sabot[agent-framework]'" in done.stdout
    assert "agent_framework" in done.stdout


@pytest.mark.slow
def test_a_missing_extra_stops_the_wave_before_any_cell_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--sabot-wave=agent-framework",
            "--sabot-task=T1",
            "--sabot-config=default",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "--sabot-out",
            str(out),
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=_without_agent_framework(tmp_path),
    )
    text = done.stdout + done.stderr
    assert done.returncode != 0
    assert "pytest-sabot[agent-framework]" in text
    assert not (out / "cells").exists() or not any((out / "cells").iterdir())


# --------------------------------------------------------------------------- real cells
# Whole cells of the candidate matrix through run_cell: the harness context, the gateway on
# 127.0.0.1 and the embedded keyless model. No network beyond loopback, no key.

TASK_IDS = ("T1", "T2", "T3", "T4", "T5")
OPERATOR_IDS = ("O1", "O2", "O3", "O4", "O5", "O6")
MAGENTIC_RUN = ("O1", "O4", "O5")  # the guardrail operators not carved out (I61)


@pytest.fixture(scope="module")
def gateway_url() -> Iterator[str]:
    from pytest_sabot.gateway.server import start_gateway

    with start_gateway() as gateway:
        yield gateway.url


@pytest.fixture(scope="module")
def std() -> Any:
    from pytest_sabot.matrix.standard import load_standard

    return load_standard("agent-framework", ROOT)


@dataclass
class RealRun:
    passed: bool
    pass_reason: str
    events: list[Any]
    verdict: Any = None


def run_real(
    out: Path,
    gateway_url: str,
    std: Any,
    persona: str,
    config: str,
    operator: str | None,
    task: str,
    seed: int = 11,
) -> RealRun:
    from pytest_sabot.core.records import cell_dir
    from pytest_sabot.core.trace_io import read_trace
    from pytest_sabot.harness.run import RunSettings, run_cell
    from pytest_sabot.results.adjudicate import score_fault_dir

    settings = RunSettings(
        root=ROOT, out_dir=out, gateway_url=gateway_url, model=persona, timeout_s=240
    )
    cell = std.cell(f"agent_framework-{config}-{operator or 'baseline'}-{task}-s{seed}")
    outcome = run_cell(cell, std.wave, settings)
    assert outcome.error is None, outcome.error
    events = list(read_trace(cell_dir(out, cell.id)).events)
    verdict = None
    if operator is not None:
        verdict = score_fault_dir(std, cell, cell_dir(out, cell.id), "passed")
    return RealRun(outcome.passed, outcome.pass_reason, events, verdict)


def after_injection(events: list[Any], kind: str) -> list[Any]:
    injected = [e.seq for e in events if e.kind == "injection"]
    start = injected[0] if injected else 0
    return [e for e in events if e.kind == kind and e.seq >= start]


@pytest.mark.slow
@pytest.mark.parametrize("config", ["default", "guardrail"])
@pytest.mark.parametrize("task", TASK_IDS)
def test_S3_1_baseline_passes_under_sim_realistic(
    tmp_path: Path, gateway_url: str, std: Any, config: str, task: str
) -> None:
    run = run_real(tmp_path, gateway_url, std, "sim:realistic", config, None, task)
    assert run.passed, run.pass_reason
    assert [e.kind for e in run.events if e.kind == "artifact"] == ["artifact"]
    assert run.events[-1].kind == "run_end" and run.events[-1].data.status == "completed"
    assert run.events[0].data.framework == "agent_framework"
    assert run.events[0].data.versions["agent-framework-core"] == "1.23.0"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("config", "operator"),
    [("default", op) for op in OPERATOR_IDS] + [("guardrail", op) for op in MAGENTIC_RUN],
)
def test_S3_2_I14_every_operator_lands_under_sim_realistic(
    tmp_path: Path, gateway_url: str, std: Any, config: str, operator: str
) -> None:
    run = run_real(tmp_path, gateway_url, std, "sim:realistic", config, operator, "T1")
    (probe,) = [e for e in run.events if e.kind == "probe"]
    assert probe.data.landed, probe.data.evidence
    assert [e.data.operator for e in run.events if e.kind == "injection"][:1] == [operator]
    assert run.verdict.excluded is None


@pytest.mark.slow
@pytest.mark.parametrize("operator", ["O2", "O3", "O6"])
def test_S10_6_I61_carved_out_operators_land_only_after_the_magentic_team(
    tmp_path: Path, gateway_url: str, std: Any, operator: str
) -> None:
    from pytest_sabot.core.models.cells import Cell
    from pytest_sabot.core.records import cell_dir
    from pytest_sabot.core.trace_io import read_trace
    from pytest_sabot.harness.run import RunSettings, run_cell

    assert std.cell(f"agent_framework-guardrail-{operator}-T1-s11").carved_out
    # Run the carved-out cell anyway (a wave never does) to show where the fault lands.
    cell = Cell(
        wave=101,
        framework="agent_framework",
        config="guardrail",
        operator=operator,
        task="T1",
        seed=11,
    )
    settings = RunSettings(
        root=ROOT, out_dir=tmp_path, gateway_url=gateway_url, model="sim:vigilant", timeout_s=240
    )
    outcome = run_cell(cell, std.wave, settings)
    assert outcome.error is None
    events = list(read_trace(cell_dir(tmp_path, cell.id)).events)
    (injection,) = [e for e in events if e.kind == "injection"]
    last_ledger = max(e.seq for e in events if e.kind == "ledger")
    final = [e for e in events if e.kind == "agent_output" and e.data.stage == "final"]
    assert injection.seq > last_ledger and injection.seq > final[0].seq
    team_calls = [e for e in events if e.kind == "model_call" and e.seq > injection.seq]
    assert team_calls == []  # no component executes with the fault in view


@pytest.mark.slow
@pytest.mark.parametrize("task", TASK_IDS)
def test_S5_vigilant_reviewer_reject_routes_to_revise_and_is_counted(
    tmp_path: Path, gateway_url: str, std: Any, task: str
) -> None:
    run = run_real(tmp_path, gateway_url, std, "sim:vigilant", "default", "O1", task)
    rejects = [e for e in after_injection(run.events, "review") if "VERDICT: REJECT" in e.text]
    assert rejects and rejects[0].component == "reviewer"
    (retry,) = after_injection(run.events, "retry")
    assert retry.data.source == "revise" and retry.seq > rejects[0].seq
    revised = [e for e in run.events if e.kind == "agent_output" and e.data.stage == "revise"]
    assert revised and revised[0].seq > retry.seq
    rows = {a.row for a in run.verdict.acts}
    assert "reject-reviewer" in rows and run.verdict.detected_hard and run.verdict.reacted


@pytest.mark.slow
def test_S5_magentic_surfaces_are_recorded_on_a_real_cell(
    tmp_path: Path, gateway_url: str, std: Any
) -> None:
    run = run_real(tmp_path, gateway_url, std, "sim:vigilant", "guardrail", "O1", "T1")
    replans = after_injection(run.events, "replan")
    assert replans
    for replan in replans:
        assert magentic.STALL_LINE.match(replan.data.log_line)
        assert "74.1" in replan.data.reason  # the ledgers quote the planted conflict
    (check,) = [e for e in run.events if e.kind == "surface_check"]
    assert check.data.agree and check.data.mandated_count == len(replans)
    assert [a.row for a in run.verdict.acts if a.counts_narrow][:1] == ["retry-replan"]
    assert run.verdict.detected_hard and run.verdict.recovered


@pytest.mark.slow
def test_I62_a_team_that_never_settles_ends_at_the_round_limit_as_a_cap(
    tmp_path: Path, gateway_url: str, std: Any
) -> None:
    run = run_real(tmp_path, gateway_url, std, "sim:vigilant", "guardrail", "O4", "T1")
    kinds_seen = [e.kind for e in run.events]
    assert "artifact" not in kinds_seen
    (cap,) = [e for e in run.events if e.kind == "cap" and e.component == "orchestrator"]
    (stop,) = [e for e in run.events if e.kind == "stop_reason"]
    assert stop.text == pipeline.ROUND_LIMIT_TEXT and cap.seq < stop.seq
    assert run.events[-1].data.status == "task_failed"
    assert not any(a.act == "block" for a in run.verdict.acts)
    assert not run.passed


@pytest.mark.slow
def test_same_cell_twice_gives_the_same_trace_timing_aside(
    tmp_path: Path, gateway_url: str, std: Any
) -> None:
    def comparable(events: list[Any]) -> list[Any]:
        out = []
        for event in events:
            dumped = event.model_dump(exclude={"t"})
            dumped["data"].pop("latency_ms", None)
            out.append(dumped)
        return out

    for config in ("default", "guardrail"):
        one = run_real(tmp_path / "one", gateway_url, std, "sim:realistic", config, "O1", "T2")
        two = run_real(tmp_path / "two", gateway_url, std, "sim:realistic", config, "O1", "T2")
        assert comparable(one.events) == comparable(two.events)


def test_I34_an_unsettled_last_ledger_is_read_as_a_limit_never_as_a_final_answer() -> None:
    observer = pipeline._MagenticObserver.__new__(pipeline._MagenticObserver)
    observer.last_ledger = ledger()
    assert not observer.ended_on_a_settled_ledger()
    observer.last_ledger = ledger(satisfied=True)
    assert observer.ended_on_a_settled_ledger()
    observer.last_ledger = {**ledger(), "next_speaker": {"reason": "?", "answer": "nobody"}}
    assert observer.ended_on_a_settled_ledger()  # the framework's invalid-speaker ending
