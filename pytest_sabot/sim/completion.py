"""Building the OpenAI ChatCompletion dict the embedded model returns.

Ids derive from what the caller itself sent (its agent, the request's digest and the
call's index, never the seed or the persona), ``created`` is a fixed instant and token
counts are a character-based estimate, so the same call always yields the same bytes and
an id tells the pipeline nothing about its cell. The completion is a fixture of the
embedded model, not a measurement of any LLM.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pytest_sabot.sim.chance import stable_hex
from pytest_sabot.sim.request import ChatView

# A fixed creation time: the embedded model's output never depends on the clock.
CREATED = 1767225600  # 2026-01-01T00:00:00Z
SYSTEM_FINGERPRINT = "sabot-sim-1"


@dataclass(frozen=True)
class ToolCallOut:
    """A tool call the embedded model asks for."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """What one role decided to answer: text, tool calls, or both."""

    content: str | None
    tool_calls: tuple[ToolCallOut, ...] = ()


def estimate_tokens(chars: int) -> int:
    """A deterministic token estimate: one token per four characters, at least one."""
    return max(1, (chars + 3) // 4)


def id_key(agent: str, digest: str) -> str:
    """The seed of a call's ids: the agent and the request's digest, both the caller's own.

    The seed and the persona stay out: both decide the answer, and an id hashed from them
    would let a pipeline try every seed and persona until one matched, learning its cell's
    seed and whether its model was downgraded (SPEC.md I164)."""
    return stable_hex("sim-ids", agent, digest)


def build_completion(view: ChatView, reply: Reply, *, key: str, call_index: int) -> dict[str, Any]:
    """The ChatCompletion dict for a reply; ``key`` seeds the ids (same key, same ids).

    ``key`` must be built from what the caller already knows (see :func:`id_key`): the ids
    reach the pipeline under test, and anything hashed into them can be searched for."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    calls_out: list[dict[str, Any]] = []
    for n, call in enumerate(reply.tool_calls):
        calls_out.append(
            {
                "id": "call_" + stable_hex(key, call_index, "tool", n)[:24],
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(call.arguments, sort_keys=True, ensure_ascii=False),
                },
            }
        )
    if calls_out:
        message["tool_calls"] = calls_out
    prompt_chars = sum(len(m.text) for m in view.messages)
    completion_text = (reply.content or "") + "".join(
        c["function"]["name"] + c["function"]["arguments"] for c in calls_out
    )
    prompt_tokens = estimate_tokens(prompt_chars)
    completion_tokens = estimate_tokens(len(completion_text))
    return {
        "id": "chatcmpl-sim-" + stable_hex(key, call_index, "completion")[:24],
        "object": "chat.completion",
        "created": CREATED,
        "model": view.model,
        "system_fingerprint": SYSTEM_FINGERPRINT,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls_out else "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
