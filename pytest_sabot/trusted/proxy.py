"""In a sandboxed child: the model endpoints, served on the sandbox's own loopback and
carried over the supervisor's pipe.

A sandboxed child has no network (its own network namespace holds only a loopback
interface), so the gateway cannot be reached. Its one door is the pipe to the parent. The
child therefore serves an OpenAI-compatible listener on ``127.0.0.1`` inside its own
namespace and sends each request it receives to the parent as a harness request
(``sabot:model``); the parent forwards it to the run's scoped endpoint and answers with
the gateway's status, content type and body. The user's code is unchanged: it points the
OpenAI SDK (or any HTTP client) at ``ctx.model(agent).base_url`` as it would anyway.

Only ``POST /v1/chat/completions`` and ``GET /v1/models[/<id>]`` are carried; the parent
checks again that the bearer credential is one of its run's. A streamed completion is
served whole (the gateway builds its event stream from a whole completion).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_sabot.trusted.channel import ChildChannel, Refusal

MODEL_REQUEST = "sabot:model"
"""The harness request that carries one HTTP request of a sandboxed child's model client."""
MAX_BODY = 16 * 1024 * 1024
ROUTES = ("/v1/chat/completions", "/v1/models")


def carried(method: str, path: str) -> bool:
    """Whether a request is one the pipe carries (the scoped door's routes)."""
    path = path.split("?", 1)[0].rstrip("/")
    if method == "POST":
        return path == ROUTES[0]
    return method == "GET" and (path == ROUTES[1] or path.startswith(ROUTES[1] + "/"))


def _error(status: int, message: str, code: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "sabot_error", "param": None,
                                 "code": code}}).encode()


class PipeProxy:
    """The loopback listener of a sandboxed child; ``url`` ends in ``/v1``."""

    def __init__(self, channel: ChildChannel) -> None:
        owner = self
        self.channel = channel

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _reply(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _carry(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length < 0 or length > MAX_BODY:
                    self.close_connection = True
                    self._reply(413, "application/json",
                                _error(413, "request body too large", "body_too_large"))
                    return
                body = self.rfile.read(length) if length else b""
                if not carried(method, self.path):
                    self._reply(404, "application/json", _error(
                        404, "this endpoint serves POST /v1/chat/completions and GET "
                        "/v1/models", "unknown_route"))
                    return
                status, content_type, answer = owner.forward(
                    method, self.path, self.headers.get("Authorization", ""), body)
                self._reply(status, content_type, answer)

            def do_POST(self) -> None:
                self._carry("POST")

            def do_GET(self) -> None:
                self._carry("GET")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="sabot-model-pipe", daemon=True)
        self._thread.start()

    def forward(self, method: str, path: str, authorization: str,
                body: bytes) -> tuple[int, str, bytes]:
        """One request over the pipe: (status, content type, body) as the gateway answered."""
        try:
            answer = self.channel.call_tool(MODEL_REQUEST, {
                "method": method, "path": path, "authorization": authorization,
                "body": body.decode("utf-8", "replace"),
            })
        except Refusal as refusal:
            return 503, "application/json", _error(503, refusal.message, "sabot_refused")
        if not isinstance(answer, dict):
            return 502, "application/json", _error(502, "no answer from the parent",
                                                   "sabot_pipe_error")
        return (int(answer.get("status", 502)), str(answer.get("content_type",
                "application/json")), str(answer.get("body", "")).encode("utf-8"))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
