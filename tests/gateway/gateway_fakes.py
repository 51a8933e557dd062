"""Stand-ins used by the gateway tests: a scripted model backend and a loopback fake of a
paid OpenAI-compatible upstream that can misbehave on cue."""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_sabot.gateway import BackendReply, CallContext
from pytest_sabot.gateway.backends.base import usage_of

# A provider-key-shaped canary: it must never appear in any file the gateway writes.
CANARY_KEY = "sk-canary-7f3a9c2e1b4d6f8a0c2e4b6d"


def _value_for(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if "anyOf" in schema:
        return _value_for(schema["anyOf"][0])
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _value_for(sub) for name, sub in props.items()}
    if kind == "array":
        return [_value_for(schema.get("items", {"type": "string"}))]
    if kind == "integer":
        return 7
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return True
    if "enum" in schema:
        return schema["enum"][0]
    return "ok"


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node[part]
        return _resolve(node, root)
    if schema.get("type") == "object":
        props = {k: _resolve(v, root) for k, v in schema.get("properties", {}).items()}
        return {**schema, "properties": props}
    return schema


def scripted_completion(request: dict[str, Any], tag: str, seq: str) -> dict[str, Any]:
    """A deterministic completion that honours tools and response_format."""
    messages = request["messages"]
    last = messages[-1]
    tools = request.get("tools") or []
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:12]
    if tools and last.get("role") != "tool" and request.get("tool_choice") != "none":
        function = tools[0]["function"]
        args = _value_for(_resolve(function.get("parameters", {}), function.get("parameters", {})))
        message["tool_calls"] = [
            {
                "id": f"call_{digest}",
                "type": "function",
                "function": {"name": function["name"], "arguments": json.dumps(args)},
            }
        ]
        finish = "tool_calls"
    else:
        fmt = request.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            schema = fmt["json_schema"]["schema"]
            message["content"] = json.dumps(_value_for(_resolve(schema, schema)))
        elif fmt.get("type") == "json_object":
            message["content"] = json.dumps({"answer": tag})
        else:
            said = last.get("content")
            said = said if isinstance(said, str) else json.dumps(said)
            message["content"] = f"[{tag}] {seq} heard: {said[:60]}"
    prompt = len(json.dumps(messages)) // 4 + 1
    completion = len(json.dumps(message)) // 4 + 1
    return {
        "id": f"chatcmpl-{digest}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": tag,
        "system_fingerprint": f"fp_{tag}",  # a provider names the backend that served it
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
    }


class ScriptedBackend:
    """A test-local Backend: answers from the request alone, names the serving model."""

    def complete(self, request: dict[str, Any], call: CallContext) -> BackendReply:
        response = scripted_completion(
            request, call.name, f"{call.agent}#{call.call_index} seed={call.seed}"
        )
        return BackendReply(response=response, usage=usage_of(response), cost_usd=0.0, fixture=True)


def scripted_respond(
    request: dict[str, Any], *, persona: str, seed: int, run_key: str, agent: str, call_index: int
) -> dict[str, Any]:
    """Same signature as pytest_sabot.sim.engine.respond, for tests of the sim route."""
    return scripted_completion(request, persona, f"{agent}#{call_index} seed={seed}")


# --------------------------------------------------------------------------- fake upstream


@dataclass
class Step:
    """What the fake upstream does with one request."""

    # ok | status | quota | malformed | midstream | truncate | echo_auth | no_usage
    # | negative_usage (a usage whose completion count is below zero)
    # | reset (the connection is reset, no answer) | hang (no answer for delay_s)
    # | drip (an answer that arrives one byte per delay_s)
    kind: str = "ok"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeUpstream:
    """A loopback OpenAI-compatible server that follows a queue of Steps (then 'ok')."""

    def __init__(self) -> None:
        self.steps: deque[Step] = deque()
        self.seen: list[Seen] = []
        self.billed: list[dict[str, Any]] = []  # usage of every completion served (what it bills)
        self._lock = threading.Lock()
        self.max_in_flight = 0
        self._in_flight = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                with owner._lock:
                    owner.seen.append(Seen(self.path, dict(self.headers.items()), body))
                    step = owner.steps.popleft() if owner.steps else Step()
                    owner._in_flight += 1
                    owner.max_in_flight = max(owner.max_in_flight, owner._in_flight)
                self._counted = True
                try:
                    owner._serve(self, step, body)
                finally:
                    self._answered()

            def send_response(self, code: int, message: str | None = None) -> None:
                self._answered()
                super().send_response(code, message)

            def _answered(self) -> None:
                """A call is in flight from its body read until its answer starts to leave:
                inside the time its caller holds a connection (the caller cannot release
                one before the first byte arrives), so a caller's cap is never seen passed
                because this handler's thread was slow to note an answer already read."""
                if getattr(self, "_counted", False):
                    self._counted = False
                    with owner._lock:
                        owner._in_flight -= 1

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def queue(self, *steps: Step) -> None:
        with self._lock:
            self.steps.extend(steps)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        payload: bytes,
        headers: dict[str, str] | None = None,
        length: int | None = None,
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload) if length is None else length))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(payload)
        handler.wfile.flush()

    def _serve(self, handler: BaseHTTPRequestHandler, step: Step, body: dict[str, Any]) -> None:
        if step.kind == "reset":
            # SO_LINGER with a zero timeout: close() sends RST instead of FIN.
            handler.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )
            handler.close_connection = True
            handler.connection.close()
            return
        if step.kind == "drip":
            payload = json.dumps(scripted_completion(body, body["model"], "drip")).encode()
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.flush()
            with contextlib.suppress(OSError):
                for byte in payload:
                    handler.wfile.write(bytes([byte]))
                    handler.wfile.flush()
                    time.sleep(step.delay_s)
            return
        if step.delay_s:
            time.sleep(step.delay_s)
        if step.kind == "hang":
            handler.close_connection = True
            return
        if step.kind == "status":
            err = {
                "error": {
                    "message": f"fake {step.status}",
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            }
            self._send(handler, step.status, json.dumps(err).encode(), step.headers)
            return
        if step.kind == "quota":
            err = {
                "error": {
                    "message": "You exceeded your current quota.",
                    "type": "insufficient_quota",
                    "param": None,
                    "code": "insufficient_quota",
                }
            }
            self._send(handler, 429, json.dumps(err).encode())
            return
        if step.kind == "midstream":
            # An event stream that breaks off with an error event after the first delta.
            events = (
                b'data: {"id":"chatcmpl-x","object":"chat.completion.chunk","choices":'
                b'[{"index":0,"delta":{"content":"par"}}]}\n\n'
                b'data: {"error":{"message":"The server had an error while processing '
                b'your request.","type":"server_error"}}\n\n'
            )
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Content-Length", str(len(events)))
            handler.end_headers()
            handler.wfile.write(events)
            return
        if step.kind == "malformed":
            self._send(handler, 200, b'{"id": "chatcmpl-broken", "choices": [')
            return
        response = scripted_completion(body, body["model"], f"upstream call {len(self.seen)}")
        if step.kind == "echo_auth":
            auth = handler.headers.get("Authorization", "")
            response["choices"][0]["message"]["content"] = f"I was called with {auth}"
            response["choices"][0]["message"].pop("tool_calls", None)
        if step.kind == "no_usage":
            response.pop("usage")
        if step.kind == "negative_usage":  # a provider that reports a credit
            response["usage"]["completion_tokens"] = -40_000
        payload = json.dumps(response).encode()
        if "usage" in response:
            with self._lock:
                self.billed.append({"model": body["model"], **response["usage"]})
        if step.kind == "truncate":
            self._send(handler, 200, payload[: len(payload) // 2], length=len(payload))
            handler.close_connection = True
            return
        self._send(handler, 200, payload, step.headers)
