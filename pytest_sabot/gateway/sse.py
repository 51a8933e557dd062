"""Turning a whole ChatCompletion into the server-sent events a streaming client expects.

Pure and deterministic: ids and timestamps come from the completion itself, content and
tool-call arguments are cut into fixed-size pieces, so the same completion always gives
the same bytes.
"""

from __future__ import annotations

from typing import Any

from pytest_sabot.gateway.protocol import encode_body

PIECE = 48


def _pieces(text: str) -> list[str]:
    return [text[i : i + PIECE] for i in range(0, len(text), PIECE)] or []


def completion_to_chunks(response: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """The chat.completion.chunk objects for one completion (all choices, in order)."""
    base: dict[str, Any] = {
        "id": response.get("id", "chatcmpl-sabot"),
        "object": "chat.completion.chunk",
        "created": response.get("created", 0),
        "model": response.get("model", ""),
    }
    if "system_fingerprint" in response:
        base["system_fingerprint"] = response["system_fingerprint"]

    def chunk(choices: list[dict[str, Any]]) -> dict[str, Any]:
        out = dict(base)
        out["choices"] = choices
        if include_usage:
            out["usage"] = None
        return out

    def delta(index: int, d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"index": index, "delta": d, "logprobs": None, "finish_reason": finish}

    chunks: list[dict[str, Any]] = []
    for position, choice in enumerate(response.get("choices") or []):
        index = choice.get("index", position) if isinstance(choice, dict) else position
        message = choice.get("message") or {} if isinstance(choice, dict) else {}
        chunks.append(chunk([delta(index, {"role": "assistant", "content": ""})]))
        content = message.get("content")
        if isinstance(content, str):
            chunks.extend(chunk([delta(index, {"content": p})]) for p in _pieces(content))
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            chunks.append(chunk([delta(index, {"refusal": refusal})]))
        for t, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or {}
            head = {
                "index": t,
                "id": call.get("id"),
                "type": call.get("type", "function"),
                "function": {"name": function.get("name", ""), "arguments": ""},
            }
            chunks.append(chunk([delta(index, {"tool_calls": [head]})]))
            for piece in _pieces(str(function.get("arguments") or "")):
                part = {"index": t, "function": {"arguments": piece}}
                chunks.append(chunk([delta(index, {"tool_calls": [part]})]))
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        chunks.append(chunk([delta(index, {}, finish or "stop")]))
    if include_usage:
        final = dict(base)
        final["choices"] = []
        final["usage"] = response.get("usage")
        chunks.append(final)
    return chunks


def completion_to_sse(response: dict[str, Any], include_usage: bool) -> bytes:
    chunks = completion_to_chunks(response, include_usage)
    parts = [b"data: " + encode_body(c) + b"\n\n" for c in chunks]
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)
