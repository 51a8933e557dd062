"""Loopback fakes of the local OpenAI-compatible servers a user runs (docs/LIVE.md, "A local
model"), each answering ``POST /v1/chat/completions`` in its own server's shape:

* ``ollama``: Ollama's OpenAI-compatible endpoint (``system_fingerprint: fp_ollama``, usage
  present, the model echoed as asked);
* ``llamacpp``: llama.cpp's ``llama-server`` (a ``timings`` object beside usage, the model
  named after the loaded file);
* ``vllm``: vLLM's server (usage with ``prompt_tokens_details: null``);
* ``bare``: a server that reports no usage at all.

None checks a key; each records the headers and bodies it was sent. What they answer comes
from ``answer(body)``: by default a small script (a ``Finish`` tool call when offered, an
"APPROVE" to a critic, otherwise the embedded model's worker), enough for the two
pipelines of this directory to run end to end.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_sabot.sim import respond

SHAPES = ("ollama", "llamacpp", "vllm", "bare")


def scripted(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for a request: what a cooperative small model would say."""
    tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
    system = " ".join(str(m.get("content")) for m in body.get("messages", [])
                      if m.get("role") == "system")
    if "Finish" in tools:
        return {"role": "assistant", "content": "",
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "Finish",
                                             "arguments": '{"summary": "ready"}'}}]}
    if "critic" in system.lower():
        return {"role": "assistant", "content": "The report is complete. APPROVE"}
    answer = respond(body, persona="vigilant", seed=11, run_key="local", agent="worker",
                     call_index=0)
    message: dict[str, Any] = answer["choices"][0]["message"]
    return message


class LocalServerFake:
    def __init__(self, shape: str,
                 answer: Callable[[dict[str, Any]], dict[str, Any]] = scripted) -> None:
        assert shape in SHAPES
        self.shape = shape
        self.answer = answer
        self.seen: list[tuple[dict[str, str], dict[str, Any]]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                owner.seen.append(({k.lower(): v for k, v in self.headers.items()}, body))
                payload = json.dumps(owner.completion(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        message = self.answer(body)
        prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4
        completion = len(str(message.get("content") or "")) // 4 + 1
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion}
        out: dict[str, Any] = {
            "id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": usage,
        }
        if self.shape == "ollama":
            out["system_fingerprint"] = "fp_ollama"
        elif self.shape == "llamacpp":
            out["model"] = "qwen2.5-7b-instruct-q4_k_m.gguf"
            out["timings"] = {"prompt_n": prompt, "predicted_n": completion,
                              "predicted_per_second": 41.5}
        elif self.shape == "vllm":
            usage["prompt_tokens_details"] = None
            out["prompt_logprobs"] = None
        else:
            del out["usage"]
        return out
