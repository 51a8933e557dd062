"""The AutoGen / Magentic-One pipeline (standard sections 5, 8 and 10.6).

The pipelines run the real autogen-agentchat 0.7.5 teams over real HTTP. The model side is
a loopback OpenAI-compatible server in this file, scripted per scenario (it stands in for
the gateway); the run context is a small test-local implementation of the harness
contract that writes a real trace.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from loopback import REJECTION_LAYOUTS, emit_run_start, record_handoff, serve_json

from pytest_sabot.core.context import Messages, ToolHandle
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.trace_io import TraceWriter

autogen_agentchat = pytest.importorskip("autogen_agentchat")

from pytest_sabot.adapters.autogen import _logging as logcap  # noqa: E402
from pytest_sabot.adapters.autogen import pipeline  # noqa: E402
from pytest_sabot.gateway import loopback  # noqa: E402

ToolRole = Literal["data", "check", "write"]

# --------------------------------------------------------------------------- model stub

LEDGER_MARK = "Is the request fully satisfied?"
FACTS_MARK = "please answer the following pre-survey"
PLAN_MARK = "please devise a short bullet-point plan"
FACTS_UPDATE_MARK = "Please rewrite the following fact sheet"
PLAN_UPDATE_MARK = "Please briefly explain what went wrong on this last run"
FINAL_MARK = "provide the final answer to the original request"


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
    critic_replies: list[str] = field(default_factory=lambda: ["Fine.\nVERDICT: APPROVE"])
    ledgers: list[dict[str, Any]] = field(default_factory=list)
    final_answer: str = '{"gain": 47.1}'
    fail_agents: set[str] = field(default_factory=set)
    worker_tool_calls: int = 1  # tool calls a worker turn asks for before drafting


class ModelStub:
    """A loopback OpenAI-compatible chat-completions server: /<agent>/v1/chat/completions."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.exchanges: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self.server = serve_json(
            lambda path, headers, body: self.answer(path.strip("/").split("/")[0], body),
            keep_alive=True,  # as a real server would
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
            return 200, self._completion(body, self._orchestrate(last_user), index)
        if agent == "worker":
            return 200, self._worker(body, index)
        critic_turns = len(self.requests_of(agent)) - 1
        replies = self.scenario.critic_replies
        return 200, self._completion(body, replies[min(critic_turns, len(replies) - 1)], index)

    def _orchestrate(self, prompt: str) -> str:
        if LEDGER_MARK in prompt:
            served = sum(
                LEDGER_MARK in _text(b["messages"][-1]) for b in self.requests_of("orchestrator")
            )
            ledgers = self.scenario.ledgers
            return json.dumps(ledgers[min(served - 1, len(ledgers) - 1)])
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
        tool_seen = sum(m["role"] == "tool" for m in messages)
        if tools and tool_seen < self.scenario.worker_tool_calls:
            data_tool = tools[0]["function"]["name"]
            call = {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": data_tool, "arguments": json.dumps({"sensor_id": "TS-0412"})},
            }
            return self._completion(body, None, index, tool_calls=[call])
        drafts = self.scenario.worker_drafts
        rounds = sum(
            1
            for b in self.requests_of("worker")
            if any("FEEDBACK" in _text(m) for m in b["messages"] if m["role"] == "user")
        )
        draft = drafts[min(1 if rounds else 0, len(drafts) - 1)]
        return self._completion(body, draft, index)

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


# --------------------------------------------------------------------------- local context

_FLAGS_HEAD = re.compile(r"^\s*FLAGS:.*$", re.IGNORECASE)


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
            wave=2, framework="autogen", config=config, operator=None, task="T1", seed=11
        )
        self.run_dir = run_dir
        self.trace = TraceWriter(run_dir)
        self.flags_protocol = True
        self.model_name = "stub-model"
        self.api_key = "local-token"
        self.workspace: dict[str, str] = {}
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
            ),
            self._tool(
                "write_file",
                "write",
                {
                    "name": {"type": "string", "description": "File name, e.g. output.json."},
                    "content": {"type": "string"},
                },
                write,
            ),
        ]

    def worker_prompt(self, round: int, feedback: str = "") -> Messages:
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
        lines = text.splitlines()
        flags = lines[0] if lines and _FLAGS_HEAD.match(lines[0]) else None
        body = "\n".join(lines[1:]) if flags is not None else text
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


def no_timing(events: list[Any]) -> list[dict[str, Any]]:
    return [e.model_dump(exclude={"t"}) for e in events]


# --------------------------------------------------------------------------- default config


def test_S5_default_critic_approve_records_verdict_text_and_stop_reasons(make_run: Any) -> None:
    ctx, stub = make_run(Scenario(), "default")
    pipeline.run(ctx)

    reviews = kinds(ctx, "review")
    assert [(r.component, r.text) for r in reviews] == [("critic", "Fine.\nVERDICT: APPROVE")]
    assert [e.text for e in kinds(ctx, "stop_reason")] == [
        "Maximum number of turns 1 reached.",
        "Text 'VERDICT:' mentioned",
    ]
    assert kinds(ctx, "retry") == []
    assert [e.data.tool for e in kinds(ctx, "tool_call")] == ["calibration_lookup"]
    offered = [t["function"]["name"] for t in stub.requests_of("worker")[0]["tools"]]
    assert offered == ["calibration_lookup", "validate_records", "write_file"]
    (artifact,) = kinds(ctx, "artifact")
    assert artifact.text == '{"gain": 47.1}'
    assert len(kinds(ctx, "model_call")) == len(stub.exchanges) == 3


def test_S5_default_reject_then_revise_records_retry_with_reason(make_run: Any) -> None:
    reason = "gain factor 74.1 contradicts the certificate value 47.1"
    scenario = Scenario(
        worker_drafts=['{"gain": 74.1}', '{"gain": 47.1}'],
        critic_replies=[f"FLAGS: 74.1 vs 47.1\nVERDICT: REJECT - {reason}", "VERDICT: APPROVE"],
    )
    ctx, stub = make_run(scenario, "default")
    pipeline.run(ctx)

    (retry,) = kinds(ctx, "retry")
    assert (retry.data.source, retry.data.reason) == ("revise", reason)
    assert retry.data.feedback == f"FLAGS: 74.1 vs 47.1\nVERDICT: REJECT - {reason}"
    assert [r.data.round for r in kinds(ctx, "review")] == [0, 1]
    outputs = kinds(ctx, "agent_output")
    assert [(o.data.stage, o.text) for o in outputs] == [
        ("worker", '{"gain": 74.1}'),
        ("revise", '{"gain": 47.1}'),
    ]
    revise_prompt = stub.requests_of("worker")[-1]["messages"]
    assert any(reason in _text(m) for m in revise_prompt)
    assert retry.seq < outputs[1].seq
    assert kinds(ctx, "artifact")[0].text == '{"gain": 47.1}'


@pytest.mark.parametrize("layout", sorted(REJECTION_LAYOUTS))
def test_S5_default_revise_carries_the_rejection_text_in_every_layout(
    make_run: Any, layout: str
) -> None:
    """Issue 22 item 5: the same thing as every other framework, the critic's rejection
    text, whatever its verdict line's layout (no longer the reason when one follows a
    hyphen and the whole reply otherwise); the recorded reason is the standard's parse."""
    reply, parsed = REJECTION_LAYOUTS[layout]
    scenario = Scenario(worker_drafts=['{"gain": 74.1}', '{"gain": 47.1}'],
                        critic_replies=[reply, "VERDICT: APPROVE"])
    ctx, stub = make_run(scenario, "default")
    pipeline.run(ctx)
    (retry,) = kinds(ctx, "retry")
    assert (retry.data.reason, retry.data.feedback) == (parsed, reply)
    revise_prompt = stub.requests_of("worker")[-1]["messages"]
    assert any(f"=== FEEDBACK ===\n{reply}" in _text(m) for m in revise_prompt)


def test_S5_default_one_revise_loop_only_second_reject_still_emits(make_run: Any) -> None:
    scenario = Scenario(
        worker_drafts=["draft A", "draft B"],
        critic_replies=["VERDICT: REJECT - wrong", "VERDICT: REJECT - still wrong"],
    )
    ctx, _ = make_run(scenario, "default")
    pipeline.run(ctx)

    assert len(kinds(ctx, "retry")) == 1
    assert len(kinds(ctx, "review")) == 2
    assert kinds(ctx, "artifact")[0].text == "draft B"


def test_S5_no_verdict_token_is_no_reject_and_no_revise(make_run: Any) -> None:
    ctx, _ = make_run(Scenario(critic_replies=["This data looks off to me."]), "default")
    pipeline.run(ctx)

    assert kinds(ctx, "retry") == []
    assert [e.text for e in kinds(ctx, "stop_reason")][-1] == "Maximum number of turns 1 reached."


def test_model_calls_are_in_the_trace_before_the_events_they_produced(make_run: Any) -> None:
    ctx, _ = make_run(Scenario(), "default")
    pipeline.run(ctx)

    order = [(e.kind, e.component) for e in ctx.events()]
    worker_calls = [i for i, k in enumerate(order) if k == ("model_call", "worker")]
    assert len(worker_calls) == 2
    assert worker_calls[0] < order.index(("tool_call", "worker")) < worker_calls[1]
    assert worker_calls[1] < order.index(("agent_output", "worker"))
    assert order.index(("model_call", "reviewer")) < order.index(("review", "critic"))


def test_magentic_ledger_call_precedes_its_ledger_event(make_run: Any) -> None:
    ctx, _ = make_run(Scenario(ledgers=[ledger(satisfied=True)]), "guardrail")
    pipeline.run(ctx)

    events = ctx.events()
    (entry,) = kinds(ctx, "ledger")
    before = [e for e in events if e.seq < entry.seq and e.kind == "model_call"]
    assert [e.component for e in before] == ["orchestrator"] * 3  # facts, plan, ledger
    after = [e.component for e in events if e.seq > entry.seq and e.kind == "model_call"]
    assert after == ["orchestrator"]  # the final answer


def test_S3_handoff_delivers_altered_text_to_critic_and_artifact(make_run: Any) -> None:
    ctx, stub = make_run(Scenario(), "default", alter_handoff=lambda t: t.replace("47.1", "41.7"))
    pipeline.run(ctx)

    critic_request = stub.requests_of("reviewer")[0]["messages"]
    assert any('{"gain": 41.7}' in _text(m) for m in critic_request)
    assert kinds(ctx, "artifact")[0].text == '{"gain": 41.7}'


def test_S8_no_temperature_sent_and_model_name_passed_through(make_run: Any) -> None:
    ctx, stub = make_run(Scenario(), "default")
    pipeline.run(ctx)

    assert stub.exchanges
    for _, body in stub.exchanges:
        assert "temperature" not in body
        assert body["model"] == "stub-model"


def test_S8_gateway_is_the_only_retry_layer_client_does_not_retry(make_run: Any) -> None:
    ctx, stub = make_run(Scenario(fail_agents={"worker"}), "default")
    with pytest.raises(Exception, match=r"upstream unavailable"):
        pipeline.run(ctx)
    assert len(stub.requests_of("worker")) == 1


# --------------------------------------------------------------------------- Magentic-One


def test_S10_6_magentic_happy_path_final_answer_is_artifact(make_run: Any) -> None:
    done = "The worker returned the full record."
    scenario = Scenario(
        worker_drafts=['FLAGS: none\n{"gain": 47.1}'],
        ledgers=[ledger(), ledger(satisfied=True, satisfied_reason=done)],
        final_answer='FLAGS: none\n{"gain": 47.1}',
    )
    ctx, stub = make_run(scenario, "guardrail")
    pipeline.run(ctx)

    ledgers = kinds(ctx, "ledger")
    assert len(ledgers) == 2
    assert ledgers[-1].data.ledger["is_request_satisfied"] == {"reason": done, "answer": True}
    assert all(e.text.startswith("Progress Ledger: ") for e in ledgers)
    assert [e.text for e in kinds(ctx, "stop_reason")] == [done]
    assert kinds(ctx, "replan") == []
    (artifact,) = kinds(ctx, "artifact")
    assert (artifact.text, artifact.data.flags_line) == ('{"gain": 47.1}', "FLAGS: none")
    assert stub.requests_of("orchestrator")[0]["model"] == "stub-model"


def test_S10_6_magentic_check_write_and_handoff_land_after_the_team_run(make_run: Any) -> None:
    scenario = Scenario(ledgers=[ledger(), ledger(satisfied=True, satisfied_reason="done")])
    ctx, stub = make_run(scenario, "guardrail", alter_handoff=lambda t: t.replace("47.1", "41.7"))
    pipeline.run(ctx)

    offered = {
        t["function"]["name"] for b in stub.requests_of("worker") for t in b.get("tools", [])
    }
    assert offered == {"calibration_lookup"}
    (stop,) = kinds(ctx, "stop_reason")
    (handoff,) = kinds(ctx, "message")
    after = [e.data.tool for e in kinds(ctx, "tool_call") if e.seq > stop.seq]
    assert (handoff.data.sender, handoff.data.receiver) == ("orchestrator", "emitter")
    assert handoff.seq > stop.seq
    assert after == ["validate_records", "write_file"]
    assert ctx.workspace == {"output.json": '{"gain": 41.7}'}
    assert kinds(ctx, "artifact")[0].text == '{"gain": 41.7}'


def test_S5_magentic_stall_replan_recorded_with_the_ledgers_reason(make_run: Any) -> None:
    why = "The tool says gain 74.1 but the bench sheet says 47.1; no progress."
    stalled = ledger(progress=False, progress_reason=why)
    scenario = Scenario(
        ledgers=[stalled, stalled, stalled, ledger(satisfied=True, satisfied_reason="done")]
    )
    ctx, stub = make_run(scenario, "guardrail")
    pipeline.run(ctx)

    (replan,) = kinds(ctx, "replan")
    assert replan.data.log_line == "Stall count exceeded, re-planning with the outer loop..."
    assert why in replan.data.reason and "74.1" in replan.data.reason
    assert replan.data.reason.count(why) == 3
    ledgers = kinds(ctx, "ledger")
    assert ledgers[2].seq < replan.seq < ledgers[3].seq
    prompts = [_text(b["messages"][-1]) for b in stub.requests_of("orchestrator")]
    assert any(FACTS_UPDATE_MARK in p for p in prompts)
    assert any(PLAN_UPDATE_MARK in p for p in prompts)
    assert [e.text for e in kinds(ctx, "stop_reason")] == ["done"]


def test_S5_magentic_stall_count_is_not_reset_by_a_replan_so_the_next_stall_replans(
    make_run: Any,
) -> None:
    stalled = ledger(progress=False, progress_reason="first conflict")
    looping = ledger(loop=True, loop_reason="asked for the same lookup again")
    scenario = Scenario(
        ledgers=[stalled, stalled, stalled, looping, ledger(satisfied=True, satisfied_reason="ok")]
    )
    ctx, _ = make_run(scenario, "guardrail")
    pipeline.run(ctx)

    replans = kinds(ctx, "replan")
    assert [r.data.reason for r in replans] == [
        " | ".join(["no progress: first conflict"] * 3),
        "in a loop: asked for the same lookup again",
    ]


@pytest.mark.slow
def test_S5_magentic_max_rounds_stop_reason_is_exact(make_run: Any) -> None:
    scenario = Scenario(ledgers=[ledger()], final_answer="partial answer")
    ctx, _ = make_run(scenario, "guardrail")
    pipeline.run(ctx)

    assert [e.text for e in kinds(ctx, "stop_reason")] == ["Max rounds reached."]
    assert len(kinds(ctx, "ledger")) == pipeline.MAX_TURNS + 1
    assert kinds(ctx, "artifact")[0].text == "partial answer"
    (cap,) = kinds(ctx, "cap")
    assert (cap.component, cap.data.cap, cap.data.limit, cap.data.setting) == (
        "orchestrator", "team_turns", pipeline.MAX_TURNS, "max_turns"
    )
    assert cap.seq == kinds(ctx, "stop_reason")[0].seq - 1


def test_S8_12_magentic_runs_at_the_frameworks_default_round_limit() -> None:
    """Only max_stalls is pinned by the standard; max_turns is the framework's default."""
    import inspect

    from autogen_agentchat.teams import MagenticOneGroupChat

    default = inspect.signature(MagenticOneGroupChat).parameters["max_turns"].default
    assert default == 20 == pipeline.MAX_TURNS
    # test_S5_magentic_max_rounds_stop_reason_is_exact shows a team run reaching it.


def test_I33_a_capped_default_worker_answers_on_autogens_reflection_call(make_run: Any) -> None:
    scenario = Scenario(worker_tool_calls=100)
    ctx, stub = make_run(scenario, "default")
    pipeline.run(ctx)
    requests = stub.requests_of("worker")
    assert len(requests) == pipeline.WORKER_TOOL_ITERATIONS + 1
    assert all(r.get("tools") for r in requests[:-1]) and not requests[-1].get("tools")
    (cap,) = kinds(ctx, "cap")
    assert (cap.component, cap.data.cap, cap.data.limit, cap.data.setting, cap.data.ending) == (
        "worker", "worker_model_calls", pipeline.WORKER_TOOL_ITERATIONS, "max_tool_iterations",
        "forced_final_answer",
    )
    worker_calls = [e for e in kinds(ctx, "model_call") if e.component == "worker"]
    assert cap.seq > worker_calls[-1].seq
    assert kinds(ctx, "agent_output")[0].text == '{"gain": 47.1}'
    assert len(kinds(ctx, "review")) == 1


def test_I33_a_capped_magentic_worker_turn_is_recorded(make_run: Any) -> None:
    scenario = Scenario(
        worker_tool_calls=100, ledgers=[ledger(), ledger(satisfied=True, satisfied_reason="ok")]
    )
    ctx, stub = make_run(scenario, "guardrail")
    pipeline.run(ctx)
    assert len(stub.requests_of("worker")) == pipeline.WORKER_TOOL_ITERATIONS + 1
    (cap,) = kinds(ctx, "cap")
    assert (cap.component, cap.data.cap) == ("worker", "worker_model_calls")
    worker_outputs = [e for e in kinds(ctx, "agent_output") if e.component == "worker"]
    assert cap.seq == worker_outputs[0].seq - 1


def test_I33_a_worker_within_its_cap_records_no_cap(make_run: Any) -> None:
    ctx, _ = make_run(Scenario(), "default")
    pipeline.run(ctx)
    assert kinds(ctx, "cap") == []


def test_I35_a_replan_is_read_from_the_message_stream_and_both_readings_agree(
    make_run: Any,
) -> None:
    stalled = ledger(progress=False, progress_reason="no progress on the record")
    scenario = Scenario(
        ledgers=[stalled, stalled, stalled, ledger(satisfied=True, satisfied_reason="done")]
    )
    ctx, _ = make_run(scenario, "guardrail")
    pipeline.run(ctx)
    (check,) = kinds(ctx, "surface_check")
    assert (check.data.surface, check.data.mandated, check.data.other) == (
        "replan", "trace_logger", "message_stream"
    )
    assert (check.data.mandated_count, check.data.other_count, check.data.agree) == (1, 1, True)
    assert check.seq > kinds(ctx, "replan")[0].seq


def test_I35_a_run_without_a_replan_agrees_on_zero(make_run: Any) -> None:
    scenario = Scenario(ledgers=[ledger(satisfied=True, satisfied_reason="done")])
    ctx, _ = make_run(scenario, "guardrail")
    pipeline.run(ctx)
    (check,) = kinds(ctx, "surface_check")
    assert (check.data.mandated_count, check.data.other_count, check.data.agree) == (0, 0, True)


def test_I35_the_trace_records_when_the_two_readings_disagree(make_run: Any) -> None:
    """No re-plan is logged, but the final answer repeats the team's whole task, which the
    stream reading takes for a re-issued ledger: the trace says the readings disagree."""
    task = LocalContext.magentic_task(None)  # type: ignore[arg-type]
    scenario = Scenario(
        ledgers=[ledger(satisfied=True, satisfied_reason="done")], final_answer=task
    )
    ctx, _ = make_run(scenario, "guardrail")
    pipeline.run(ctx)
    assert kinds(ctx, "replan") == []
    (check,) = kinds(ctx, "surface_check")
    assert (check.data.mandated_count, check.data.other_count, check.data.agree) == (0, 1, False)


def test_trace_logger_handler_never_leaks_even_when_the_run_fails(make_run: Any) -> None:
    trace_logger = logging.getLogger(autogen_agentchat.TRACE_LOGGER_NAME)
    events_logger = logging.getLogger(autogen_agentchat.EVENT_LOGGER_NAME)
    before = (list(trace_logger.handlers), trace_logger.level, events_logger.level)

    ok, _ = make_run(Scenario(ledgers=[ledger(satisfied=True)]), "guardrail", name="ok")
    pipeline.run(ok)
    failing, _ = make_run(Scenario(fail_agents={"orchestrator"}), "guardrail", name="bad")
    with pytest.raises(Exception):  # noqa: B017 - any client error is the point
        pipeline.run(failing)

    assert (list(trace_logger.handlers), trace_logger.level, events_logger.level) == before
    assert kinds(failing, "ledger") == []


def test_sequential_runs_in_one_process_do_not_share_records(make_run: Any) -> None:
    stalled = ledger(progress=False, progress_reason="stuck")
    first, _ = make_run(
        Scenario(ledgers=[stalled, stalled, stalled, ledger(satisfied=True)]), "guardrail", name="a"
    )
    pipeline.run(first)
    second, _ = make_run(Scenario(ledgers=[ledger(satisfied=True)]), "guardrail", name="b")
    pipeline.run(second)

    assert len(kinds(first, "replan")) == 1
    assert kinds(second, "replan") == []
    assert len(kinds(second, "ledger")) == 1


def test_the_gateway_token_never_reaches_the_trace(make_run: Any) -> None:
    stalled = ledger(progress=False, progress_reason="stuck")
    for config, scenario in (
        ("default", Scenario(critic_replies=["VERDICT: REJECT - x", "VERDICT: APPROVE"])),
        ("guardrail", Scenario(ledgers=[stalled, stalled, stalled, ledger(satisfied=True)])),
    ):
        ctx, stub = make_run(scenario, config, name=config)
        pipeline.run(ctx)
        ctx.trace.finish()
        assert stub.exchanges
        assert ctx.api_key not in (ctx.run_dir / "events.jsonl").read_text()


def test_a_run_called_inside_a_running_event_loop_gets_a_fresh_loop(make_run: Any) -> None:
    ctx, _ = make_run(
        Scenario(ledgers=[ledger(satisfied=True, satisfied_reason="ok")]), "guardrail"
    )

    async def caller() -> None:
        pipeline.run(ctx)

    asyncio.run(caller())
    assert len(kinds(ctx, "ledger")) == 1  # the capture follows the run onto its thread
    assert [e.text for e in kinds(ctx, "stop_reason")] == ["ok"]


@pytest.mark.slow
def test_same_scenario_gives_the_same_trace_timing_aside(make_run: Any) -> None:
    stalled = ledger(progress=False, progress_reason="stuck")
    scenario = Scenario(ledgers=[ledger(), stalled, stalled, stalled, ledger(satisfied=True)])
    one, _ = make_run(scenario, "guardrail", name="one")
    pipeline.run(one)
    two, _ = make_run(scenario, "guardrail", name="two")
    pipeline.run(two)

    assert no_timing(one.events()) == no_timing(two.events())


# --------------------------------------------------------------------------- pure readings


def test_S5_stall_reasons_are_the_no_progress_and_in_loop_reasons() -> None:
    both = ledger(progress=False, progress_reason="p", loop=True, loop_reason="l")
    assert logcap.stall_reasons(both) == ["no progress: p", "in a loop: l"]
    assert logcap.stall_reasons(ledger(loop=True, loop_reason="again")) == ["in a loop: again"]
    assert logcap.stall_reasons(ledger()) == []
    assert logcap.stall_reasons(ledger(satisfied=True, progress=False)) == []


def test_S5_replan_reason_follows_the_orchestrator_stall_count() -> None:
    follower = logcap.LedgerFollower()
    lines = [
        ledger(progress=False, progress_reason="first"),
        ledger(),  # progress: one stall off the count
        ledger(progress=False, progress_reason="second"),
        ledger(loop=True, loop_reason="third"),
    ]
    for entry in lines:
        assert isinstance(follower.feed(logcap.LEDGER_PREFIX + str(entry)), logcap.LedgerRecord)
    replan = follower.feed(logcap.REPLAN_LINE)
    assert replan == logcap.ReplanRecord(
        line=logcap.REPLAN_LINE, reason="no progress: second | in a loop: third"
    )
    assert follower.feed("Next Speaker: worker") is None


def test_ledger_line_is_read_from_the_python_repr_the_orchestrator_logs() -> None:
    entry = ledger(instruction="Quote 'rev A' and \"rev B\"\nthen stop.")
    assert logcap.parse_ledger(f"Progress Ledger: {entry}") == entry
    assert logcap.parse_ledger("Progress Ledger: not a dict") is None
    assert logcap.parse_ledger("Next Speaker: worker") is None


def test_S5_verdict_parse_is_case_insensitive_first_match() -> None:
    assert pipeline.parse_verdict("ok\nverdict: reject - off by 3\nVERDICT: APPROVE") == (
        "reject",
        "off by 3",
    )
    assert pipeline.parse_verdict("VERDICT: APPROVE") == ("approve", "")
    assert pipeline.parse_verdict("looks fine") is None


def test_S5_pipeline_verdict_parse_agrees_with_the_scorer() -> None:
    from pytest_sabot.core.verdict_token import parse_verdict as scorer_parse

    replies = [
        "FLAGS: none\nVERDICT: APPROVE",
        "Verdict: Reject - the gain is 74.1, not 47.1\nmore text",
        "VERDICT:REJECT-terse",
        "VERDICT: REJECT",
        "no token here",
        "VERDICT: MAYBE",
    ]
    for reply in replies:
        ours = pipeline.parse_verdict(reply)
        theirs = scorer_parse(reply)
        assert (ours is None) == (theirs is None), reply
        if ours is not None and theirs is not None:
            assert ours == (theirs.verdict, theirs.reason or ""), reply


def test_adapter_registry_resolves_autogen_to_this_module() -> None:
    from pytest_sabot.adapters import get_adapter

    assert get_adapter("autogen") is pipeline.run


@pytest.mark.slow
def test_importing_the_package_imports_no_autogen() -> None:
    import subprocess
    import sys

    code = (
        "import sys, pytest_sabot, pytest_sabot.adapters, pytest_sabot.harness.run; "
        "sys.exit(any(m.split('.')[0] in ('autogen_agentchat', 'autogen_core', 'autogen_ext') "
        "for m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def _handle(name: str, properties: dict[str, Any], **extra: Any) -> ToolHandle:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return ToolHandle(name=name, description="", parameters=schema, invoke=lambda a: "", **extra)


def test_carve_out_arguments_fill_the_artifact_and_its_file_name() -> None:
    write = _handle(
        "write_file",
        {
            "name": {"type": "string", "description": "File name, e.g. output.json."},
            "content": {"type": "string"},
        },
    )
    check = _handle("validate_records", {"record": {"type": "string"}})
    assert pipeline.arguments_for_artifact(write, "X") == {"name": "output.json", "content": "X"}
    assert pipeline.arguments_for_artifact(check, "X") == {"record": "X"}
    assert (pipeline.tool_role(write), pipeline.tool_role(check)) == ("write", "check")
    stated = _handle(
        "save",
        {"a": {"type": "string"}},
        role="check",
        artifact_arguments=lambda text: {"a": text.upper()},
    )
    assert pipeline.tool_role(stated) == "check"
    assert pipeline.arguments_for_artifact(stated, "x") == {"a": "X"}


def test_carve_out_arguments_refuse_to_guess_an_unnamed_file() -> None:
    write = _handle("write_file", {"path": {"type": "string"}, "content": {"type": "string"}})
    with pytest.raises(ValueError, match="'path'"):
        pipeline.arguments_for_artifact(write, "X")


# --------------------------------------------------------------------------- real cells
# Whole cells through run_cell: the harness context, the gateway on 127.0.0.1 and the
# embedded keyless model. No network beyond loopback, no key.

ROOT = Path(__file__).resolve().parents[2]
TASK_IDS = ("T1", "T2", "T3", "T4", "T5")
OPERATOR_IDS = ("O1", "O2", "O3", "O4", "O5", "O6")


@pytest.fixture(scope="module")
def gateway_url() -> Iterator[str]:
    from pytest_sabot.gateway.server import start_gateway

    with start_gateway() as gateway:
        yield gateway.url


def run_real(
    out: Path, gateway_url: str, persona: str, config: str, operator: str | None, task: str
) -> list[Any]:
    from pytest_sabot.core.records import cell_dir
    from pytest_sabot.core.trace_io import read_trace
    from pytest_sabot.harness.run import RunSettings, run_cell
    from pytest_sabot.matrix.cells import load_wave_spec, wave_path

    wave = load_wave_spec(wave_path(2, ROOT), 2)
    settings = RunSettings(
        root=ROOT, out_dir=out, gateway_url=gateway_url, model=persona, timeout_s=240
    )
    cell = Cell(wave=2, framework="autogen", config=config, operator=operator, task=task, seed=11)
    outcome = run_cell(cell, wave, settings)
    assert outcome.error is None, outcome.error
    events = list(read_trace(cell_dir(out, cell.id)).events)
    events_outcome = {"passed": outcome.passed, "reason": outcome.pass_reason}
    return [events_outcome, *events]


def after_injection(events: list[Any], kind: str) -> list[Any]:
    injected = [e.seq for e in events if e.kind == "injection"]
    start = injected[0] if injected else 0
    return [e for e in events if e.kind == kind and e.seq >= start]


@pytest.mark.slow
@pytest.mark.parametrize("config", ["default", "guardrail"])
@pytest.mark.parametrize("task", TASK_IDS)
def test_S3_baseline_passes_under_sim_vigilant(
    tmp_path: Path, gateway_url: str, config: str, task: str
) -> None:
    outcome, *events = run_real(tmp_path, gateway_url, "sim:vigilant", config, None, task)
    assert outcome["passed"], outcome["reason"]
    assert [e.kind for e in events if e.kind == "artifact"] == ["artifact"]
    assert events[-1].kind == "run_end" and events[-1].data.status == "completed"


@pytest.mark.slow
@pytest.mark.parametrize("task", TASK_IDS)
def test_S5_vigilant_default_critic_rejects_O1_and_revise_carries_the_reason(
    tmp_path: Path, gateway_url: str, task: str
) -> None:
    _, *events = run_real(tmp_path, gateway_url, "sim:vigilant", "default", "O1", task)
    rejects = [
        e
        for e in after_injection(events, "review")
        if (pipeline.parse_verdict(e.text) or ("", ""))[0] == "reject"
    ]
    assert rejects and rejects[0].component == "critic"
    (retry,) = after_injection(events, "retry")
    assert retry.data.source == "revise"
    assert retry.data.reason == pipeline.parse_verdict(rejects[0].text)[1]  # type: ignore[index]


@pytest.mark.slow
@pytest.mark.parametrize("operator", OPERATOR_IDS)
def test_S5_credulous_critic_never_rejects(tmp_path: Path, gateway_url: str, operator: str) -> None:
    _, *events = run_real(tmp_path, gateway_url, "sim:credulous", "default", operator, "T1")
    reviews = [e for e in events if e.kind == "review"]
    assert reviews
    assert all((pipeline.parse_verdict(e.text) or ("",))[0] == "approve" for e in reviews)
    assert [e for e in events if e.kind == "retry"] == []


@pytest.mark.slow
def test_S5_magentic_stall_path_records_replans_with_the_ledger_reasons(
    tmp_path: Path, gateway_url: str
) -> None:
    _, *events = run_real(tmp_path, gateway_url, "sim:vigilant", "guardrail", "O1", "T1")
    replans = after_injection(events, "replan")
    assert replans
    for replan in replans:
        assert replan.data.log_line == logcap.REPLAN_LINE
        assert replan.data.reason
    stalls = [
        entry
        for entry in after_injection(events, "ledger")
        if logcap.stall_reasons(entry.data.ledger)
    ]
    assert len(stalls) >= pipeline.MAX_STALLS
    assert any(r in replans[0].data.reason for r in logcap.stall_reasons(stalls[0].data.ledger))


@pytest.mark.slow
@pytest.mark.parametrize("config", ["default", "guardrail"])
def test_same_cell_twice_gives_the_same_trace_timing_aside(
    tmp_path: Path, gateway_url: str, config: str
) -> None:
    def comparable(events: list[Any]) -> list[Any]:
        out = []
        for event in events:
            dumped = event.model_dump(exclude={"t"}) if hasattr(event, "model_dump") else event
            if isinstance(dumped, dict) and isinstance(dumped.get("data"), dict):
                dumped["data"].pop("latency_ms", None)
            out.append(dumped)
        return out

    one = run_real(tmp_path / "one", gateway_url, "sim:realistic", config, "O1", "T2")
    two = run_real(tmp_path / "two", gateway_url, "sim:realistic", config, "O1", "T2")
    assert comparable(one) == comparable(two)
