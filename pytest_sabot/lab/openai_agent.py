"""A lab agent played by a model through tool calling, with the official OpenAI SDK.

The model is given the public task and the tool catalog (``context.briefing()``), one
function per tool the agent may call (the catalog's argument schema as its parameters)
and a ``wait`` function (the run's virtual sleep, for ``retry_after_ms``). Each tool call
it makes is routed through ``context.call_tool``; the answer it reads is the observation's
stable JSON (``Observation.to_text()``). The loop ends when the model answers without a
tool call (its text is the run's output, never judged) or after ``max_turns`` model calls.

The endpoint is whatever OpenAI-compatible base URL it is given: the lab's commands give
it a gateway's door (``commands.lab_live``), so budget, secrets and recording are the
gateway's, as for a wave. This module holds no key and reads no environment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pytest_sabot.lab.agent import AgentContext, AgentResult, LabAgent

WAIT_TOOL = "wait"
SYSTEM_PROMPT = (
    "You are a helpdesk agent. You change business state only through the tools you are "
    "given; their contracts (arguments, results, typed errors, idempotency) are in the "
    "briefing. Do exactly what the request asks, no more: an effect repeated is an effect "
    "twice. After a timeout the outcome is unknown: read the state back, or repeat with "
    "the same operation key where idempotency is supported. Honour retry_after_ms with the "
    "wait tool. When you are done, answer with a short account and no tool call."
)


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the model is reached: an OpenAI-compatible base URL, a credential for it and
    the model name."""

    base_url: str
    api_key: str
    model: str


def tool_specs(context: AgentContext) -> list[dict[str, Any]]:
    """The functions the model may call: one per tool of the catalog, and ``wait``."""
    specs: list[dict[str, Any]] = [
        {"type": "function", "function": {"name": c.name, "description": c.description,
                                          "parameters": c.arguments}}
        for c in context.catalog
    ]
    specs.append({"type": "function", "function": {
        "name": WAIT_TOOL, "description": "Wait this many milliseconds of the run's clock "
        "(for a rate limit's retry_after_ms).",
        "parameters": {"type": "object", "properties": {"ms": {"type": "integer",
                                                                "minimum": 0}},
                       "required": ["ms"]}}})
    return specs


def _answer(context: AgentContext, name: str, raw: str) -> str:
    try:
        arguments = json.loads(raw or "{}")
    except ValueError:
        arguments = {"_unparsed": raw}
    if not isinstance(arguments, dict):
        arguments = {"_unparsed": raw}
    if name == WAIT_TOOL:
        ms = arguments.get("ms")
        try:
            context.sleep(ms if isinstance(ms, int) and not isinstance(ms, bool) else -1)
        except ValueError as exc:
            return json.dumps({"ok": False, "error": {"code": "invalid_arguments",
                                                      "message": str(exc)}})
        return json.dumps({"ok": True, "result": {"waited_ms": ms}})
    return context.call_tool(name, arguments).to_text()


def openai_agent(endpoint: ModelEndpoint, *, max_turns: int = 24,
                 name: str | None = None) -> LabAgent:
    """A lab agent played by ``endpoint``'s model (kind ``python``; not a fixture)."""
    def run(context: AgentContext) -> AgentResult:
        from openai import OpenAI

        client = OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key, max_retries=0)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"{context.task.instructions}\n\nBriefing (JSON):\n"
             f"{context.briefing()}"},
        ]
        tools = tool_specs(context)
        for _ in range(max_turns):
            reply = client.chat.completions.create(
                model=endpoint.model, messages=messages, tools=tools)  # type: ignore[arg-type]
            message = reply.choices[0].message
            if not message.tool_calls:
                return AgentResult(message.content or "")
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                function = getattr(call, "function", None)
                if function is None:
                    continue
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": _answer(context, function.name,
                                                    function.arguments)})
        return AgentResult(f"stopped after {max_turns} model calls")

    return LabAgent(name or f"openai:{endpoint.model}", "python", run)


__all__ = ["SYSTEM_PROMPT", "WAIT_TOOL", "ModelEndpoint", "openai_agent", "tool_specs"]
