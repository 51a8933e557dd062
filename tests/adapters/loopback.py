"""Loopback model server and run context shared by the adapter pipeline tests.

The server speaks OpenAI-compatible chat completions on 127.0.0.1, routed per agent as
``/<agent>/v1/chat/completions``. The run context is a small implementation of the
RunContext protocol that writes a real trace.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pytest_sabot.core.context import Messages, ToolHandle
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.prompt_format import render
from pytest_sabot.core.trace_io import TraceWriter
from pytest_sabot.gateway import loopback

# --------------------------------------------------------------------------- loopback server

Reply = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]
Answer = Callable[[str, dict[str, str], dict[str, Any]], tuple[int, Any]]


def serve_json(answer: Answer, *, keep_alive: bool = False) -> ThreadingHTTPServer:
    """Serve POSTed JSON bodies on 127.0.0.1 from ``answer(path, headers, body)``.

    The server runs on a daemon thread; the caller shuts it down and closes it.
    """

    class Handler(BaseHTTPRequestHandler):
        if keep_alive:
            protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload = answer(self.path, headers, body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


@dataclass
class Exchange:
    agent: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    reply: dict[str, Any]


@dataclass
class ScriptedServer:
    """OpenAI-compatible chat completions on 127.0.0.1; each agent answers from its script.

    A script entry is ``{"content": ...}``, ``{"tool_calls": [(name, args), ...]}``,
    ``{"status": 500}``, or a function of the request body returning one of those.
    """

    scripts: dict[str, list[Reply]] = field(default_factory=dict)
    exchanges: list[Exchange] = field(default_factory=list)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def requests_of(self, agent: str) -> list[dict[str, Any]]:
        return [x.body for x in self.exchanges if x.agent == agent]

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        if len(parts) != 4 or parts[1:] != ["v1", "chat", "completions"]:
            return 404, {"error": {"message": f"no route {path}"}}
        agent = parts[0]
        with self._lock:
            script = self.scripts.get(agent, [])
            if not script:
                return 500, {"error": {"message": f"script for {agent} is exhausted"}}
            entry = script.pop(0)
            reply = entry(body) if callable(entry) else entry
            self.exchanges.append(Exchange(agent, path, headers, body, reply))
            index = len(self.exchanges)
        if "status" in reply:
            return int(reply["status"]), {"error": {"message": "scripted failure"}}
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
        finish = "stop"
        if reply.get("tool_calls"):
            finish = "tool_calls"
            message["tool_calls"] = [
                {
                    "id": f"call_{index}_{n}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for n, (name, args) in enumerate(reply["tool_calls"])
            ]
        return 200, {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", ""),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }


@dataclass
class ServerHandle:
    state: ScriptedServer
    httpd: ThreadingHTTPServer

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def start_server() -> ServerHandle:
    state = ScriptedServer()
    httpd = serve_json(state.answer)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    return ServerHandle(state, httpd)


# --------------------------------------------------------------------------- run context

CONTRACT_LINE = "RESULT:"
LOOKUP_VALUES = {"R-7": "47.1"}
LOOKUP_PROPERTIES: dict[str, Any] = {"record": {"type": "string"}}


def emit_run_start(trace: TraceWriter, cell: Cell, rules: str, model: str) -> None:
    """The harness's opening event for ``cell``."""
    trace.emit(
        "run_start",
        "harness",
        cell_id=cell.id,
        wave=cell.wave,
        framework=cell.framework,
        config=cell.config,
        operator=cell.operator,
        task=cell.task,
        seed=cell.seed,
        rules=rules,
        model=model,
    )


def record_handoff(trace: TraceWriter, sender: str, receiver: str, delivered: str) -> str:
    """Record the message the receiver gets on the sender->receiver channel."""
    trace.emit(
        "message",
        sender,
        delivered,
        sender=sender,
        receiver=receiver,
        channel=f"{sender}->{receiver}",
    )
    return delivered


@dataclass
class LoopbackContext:
    """A RunContext for one run against the scripted server, writing a real trace.

    ``lookup_properties`` is the argument schema of the record_lookup tool; ``alter``
    rewrites every handoff on its way to the receiver.
    """

    cell: Cell
    run_dir: Path
    server: ScriptedServer
    alter: Callable[[str], str] = lambda text: text
    flags_protocol: bool = False
    model_name: str = "stub-model"
    api_key: str = "run-token-123"
    lookup_properties: dict[str, Any] = field(default_factory=lambda: dict(LOOKUP_PROPERTIES))
    trace: TraceWriter = field(init=False)
    worker_prompts: list[tuple[int, str]] = field(default_factory=list)
    reviewer_drafts: list[tuple[int, str]] = field(default_factory=list)
    emitted: list[str] = field(default_factory=list)
    _synced: int = 0
    _calls: dict[str, int] = field(default_factory=dict)
    _tool_calls: int = 0

    def __post_init__(self) -> None:
        self.trace = TraceWriter(self.run_dir)
        emit_run_start(self.trace, self.cell, rules="v0.1.3", model=self.model_name)

    def base_url(self, agent: str) -> str:
        return f"{self.server.url}/{agent}/v1"

    def http_client(self) -> Any:
        return loopback.sync_client()

    def http_async_client(self) -> Any:
        return loopback.async_client()

    @property
    def tools(self) -> list[ToolHandle]:
        return [
            ToolHandle(
                name="record_lookup",
                description="Look up the measured value of a record by id.",
                parameters={
                    "type": "object",
                    "properties": copy.deepcopy(self.lookup_properties),
                    "required": ["record"],
                },
                invoke=self._lookup,
            )
        ]

    def _lookup(self, arguments: dict[str, Any]) -> str:
        self._tool_calls += 1
        call_id = f"t{self._tool_calls}"
        self.trace.emit(
            "tool_call", "worker", tool="record_lookup", call_id=call_id, arguments=arguments
        )
        observation = LOOKUP_VALUES.get(str(arguments.get("record")), "unknown record")
        self.trace.emit("tool_result", "tools", observation, tool="record_lookup", call_id=call_id)
        return observation

    def worker_prompt(self, round: int, feedback: str = "") -> Messages:
        self.worker_prompts.append((round, feedback))
        sections: list[tuple[str, str] | tuple[str, str, str]] = [
            ("TASK", "T1 Calibration records"),
            ("BRIEF", "Report the measured value of record R-7."),
            ("ROUND", str(round)),
        ]
        if feedback:
            sections.append(("FEEDBACK", feedback))
        return Messages(system=render([("ROLE", "worker")]), user=render(sections))

    def handoff(self, sender: str, receiver: str, text: str) -> str:
        return record_handoff(self.trace, sender, receiver, self.alter(text))

    def reviewer_prompt(self, delivered: str, round: int) -> Messages:
        self.reviewer_drafts.append((round, delivered))
        return Messages(
            system=render([("ROLE", "reviewer")]),
            user=render([("DRAFT", delivered), ("ROUND", str(round))]),
        )

    def guardrail_text(self) -> str:
        return f"The output must contain a line starting {CONTRACT_LINE}"

    def check_contract(self, artifact: str) -> list[str]:
        if any(line.startswith(CONTRACT_LINE) for line in artifact.splitlines()):
            return []
        return [f"no line starts with {CONTRACT_LINE!r}"]

    def magentic_task(self) -> str:
        return ""

    def sync_model_calls(self) -> None:
        for exchange in self.server.exchanges[self._synced :]:
            index = self._calls.get(exchange.agent, 0)
            self._calls[exchange.agent] = index + 1
            self.trace.emit(
                "model_call",
                exchange.agent,
                exchange.reply.get("content") or "",
                call_index=index,
                model_requested=exchange.body.get("model", ""),
                model_served=exchange.body.get("model", ""),
            )
        self._synced = len(self.server.exchanges)

    def emit(self, text: str) -> None:
        self.emitted.append(text)
        self.trace.emit("artifact", "harness", text, name="output.txt")


# The reviewer's verdict line in the layouts a real reviewer writes (issue 22 item 5): the
# revise pass carries the whole rejection text in every layout and every framework; the
# retry's recorded reason is the standard's parse, a reason only after an ASCII hyphen.
REJECTION_LAYOUTS: dict[str, tuple[str, str]] = {
    "hyphen": ("Mismatch with the record.\nVERDICT: REJECT - 47.1 is not R-7's value",
               "47.1 is not R-7's value"),
    "em-dash": ("Mismatch with the record.\nVERDICT: REJECT — 47.1 is not R-7's value", ""),
    "colon": ("Mismatch with the record.\nVERDICT: REJECT: 47.1 is not R-7's value", ""),
    "next-line": ("Mismatch with the record.\nVERDICT: REJECT\n47.1 is not R-7's value", ""),
}
