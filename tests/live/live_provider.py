"""A loopback stand-in for a paid OpenAI-compatible provider, answered by the embedded model.

It speaks the provider's wire format (POST /v1/chat/completions, whole JSON replies with
usage, a required bearer key, OpenAI-shaped errors) and nothing about Sabot: it never sees
an agent name or a run key, so the embedded model decides the answering role from the
request text alone (framework templates, then the ROLE section of the harness prompts).
Models named in ``weak_models`` answer with the persona's weak tier, so an O4 downgrade
served by the provider behaves like a weaker model.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import struct
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_sabot.sim.engine import respond

PROVIDER_RUN_KEY = "provider"
_SELF_INTRODUCTION = re.compile(
    r"^\s*You are (?:the |a |an )?(worker|reviewer|critic|guardrail|orchestrator)\b",
    re.IGNORECASE,
)


@dataclass
class Fault:
    """One scripted misbehaviour, served instead of an answer (then the queue moves on).

    ``status`` 0 is a transport fault: ``code`` 'reset' resets the connection without an
    answer, 'hang' holds it open without one for ``hang_s``."""

    status: int
    code: str
    kind: str = "requests"
    retry_after: str | None = None
    hang_s: float = 30.0


@dataclass
class Served:
    """One request as the provider saw it."""

    model: str
    status: int
    authorization: str
    body: dict[str, Any] = field(repr=False)
    usage: dict[str, Any] = field(default_factory=dict)


def _error(message: str, type_: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def agent_of(body: dict[str, Any]) -> str:
    """The role a request's system prompt introduces ('You are the worker ...'), else ''.

    A provider never sees Sabot's agent names; like a real model it can only read who it is
    asked to be from the prompt itself.
    """
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            content = message.get("content")
            text = content if isinstance(content, str) else json.dumps(content, default=str)
            found = _SELF_INTRODUCTION.match(text)
            return found.group(1).lower() if found else ""
    return ""


def conversation_key(body: dict[str, Any]) -> str:
    """A conversation is named by its opening messages (system prompt and first turn)."""
    messages = body.get("messages") or []
    opening = json.dumps(messages[:2], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(opening.encode("utf-8")).hexdigest()[:16]


class FakeProvider:
    """Serve chat completions from the embedded model on 127.0.0.1 (``url`` ends in /v1)."""

    def __init__(
        self,
        api_key: str,
        *,
        persona: str = "vigilant",
        seed: int = 11,
        models: tuple[str, ...] = ("gpt-5.6-terra", "gpt-5.6-luna"),
        weak_models: tuple[str, ...] = ("gpt-5.6-luna",),
        usage: dict[str, int] | None = None,
    ) -> None:
        self.api_key = api_key
        self.usage = usage  # billed instead of the embedded model's (a pricier provider)
        self.persona = persona
        self.seed = seed
        self.models = models
        self.weak_models = weak_models
        self.faults: deque[Fault] = deque()
        self.served: list[Served] = []
        self._turns: Counter[str] = Counter()
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                status, payload, headers = owner.handle(
                    self.path, self.headers.get("Authorization", ""), raw
                )
                if status == 0:  # a transport fault: no answer at all
                    self.close_connection = True
                    if payload["transport"] == "hang":
                        time.sleep(float(payload["hang_s"]))
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.connection.close()
                    return
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    # ------------------------------------------------------------------ control

    def queue(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def statuses(self) -> list[int]:
        with self._lock:
            return [s.status for s in self.served]

    def log(self) -> list[dict[str, Any]]:
        """What was served, without the key: model, status, whether the key matched, usage."""
        with self._lock:
            return [
                {
                    "model": s.model,
                    "status": s.status,
                    "auth_ok": s.authorization == f"Bearer {self.api_key}",
                    "usage": s.usage,
                }
                for s in self.served
            ]

    # ------------------------------------------------------------------ serving

    def handle(
        self, path: str, authorization: str, raw: bytes
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Answer one request: (status, JSON body, extra headers)."""
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        model = str(body.get("model", "")) if isinstance(body, dict) else ""
        status, payload, headers = self._decide(path, authorization, body, model)
        usage = payload.get("usage") if status == 200 else None
        with self._lock:
            self.served.append(
                Served(
                    model,
                    status,
                    authorization,
                    body if isinstance(body, dict) else {},
                    dict(usage) if isinstance(usage, dict) else {},
                )
            )
        return status, payload, headers

    def _decide(
        self, path: str, authorization: str, body: Any, model: str
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        if path.rstrip("/") != "/v1/chat/completions":
            return 404, _error(f"Unknown path {path}", "invalid_request_error", "unknown_url"), {}
        if authorization != f"Bearer {self.api_key}":
            # Like the real service, the refusal quotes the key it was shown.
            shown = authorization.removeprefix("Bearer ")
            return (
                401,
                _error(
                    f"Incorrect API key provided: {shown}.",
                    "invalid_request_error",
                    "invalid_api_key",
                ),
                {},
            )
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return 400, _error("messages is required", "invalid_request_error", "invalid_body"), {}
        if model not in self.models:
            return (
                404,
                _error(
                    f"The model '{model}' does not exist",
                    "invalid_request_error",
                    "model_not_found",
                ),
                {},
            )
        with self._lock:
            fault = self.faults.popleft() if self.faults else None
        if fault is not None and fault.status == 0:
            return 0, {"transport": fault.code, "hang_s": fault.hang_s}, {}
        if fault is not None:
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
            message = (
                "You exceeded your current quota."
                if fault.code == "insufficient_quota"
                else "Rate limit reached; try again later."
            )
            return fault.status, _error(message, fault.kind, fault.code), headers
        if body.get("stream"):
            return (
                400,
                _error(
                    "this provider answers whole completions only",
                    "invalid_request_error",
                    "stream_unsupported",
                ),
                {},
            )
        persona = f"{self.persona}-weak" if model in self.weak_models else self.persona
        key = conversation_key(body)
        with self._lock:
            turn = self._turns[key]
            self._turns[key] = turn + 1
        completion = respond(
            body,
            persona=persona,
            seed=self.seed,
            run_key=PROVIDER_RUN_KEY,
            agent=agent_of(body),
            call_index=turn,
        )
        completion["model"] = model
        completion["id"] = completion["id"].replace("chatcmpl-sim-", "chatcmpl-")
        if self.usage is not None:
            completion["usage"] = {
                **self.usage,
                "total_tokens": sum(v for k, v in self.usage.items() if k.endswith("_tokens")),
            }
        return 200, completion, {}
