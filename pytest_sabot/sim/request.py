"""A tolerant, normalised view of an OpenAI chat-completion request body.

Framework clients send many shapes (string or list-of-parts content, ``name`` fields,
assistant tool calls with JSON-string arguments, tool messages). This module reads all of
them into plain frozen records and never raises on odd input: anything it cannot read
becomes empty text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pytest_sabot.sim.chance import stable_hex


@dataclass(frozen=True)
class ToolCallSeen:
    """A tool call an assistant message made earlier in the conversation."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Message:
    """One message, reduced to what the embedded model reads."""

    role: str
    text: str
    name: str = ""
    tool_calls: tuple[ToolCallSeen, ...] = ()
    tool_call_id: str = ""


@dataclass(frozen=True)
class ToolOffered:
    """A function tool the request offers."""

    name: str
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolExchange:
    """A tool call and the observation that came back for it (empty if none yet)."""

    name: str
    arguments: dict[str, Any]
    result: str
    call_id: str = ""


@dataclass(frozen=True)
class ChatView:
    """The request as the embedded model reads it."""

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolOffered, ...]
    tool_choice: str
    response_format: str  # "" | "text" | "json_object" | "json_schema"
    schema_name: str = ""

    def texts(self, *roles: str) -> list[str]:
        """Texts of the messages with one of the given roles (all roles if none given)."""
        return [m.text for m in self.messages if not roles or m.role in roles]

    def last(self, *roles: str) -> Message | None:
        for m in reversed(self.messages):
            if not roles or m.role in roles:
                return m
        return None

    def tool_history(self) -> list[ToolExchange]:
        """Every tool call made so far, paired with its result by call id, in order."""
        results = {m.tool_call_id: m.text for m in self.messages if m.role == "tool"}
        out: list[ToolExchange] = []
        for m in self.messages:
            for call in m.tool_calls:
                out.append(
                    ToolExchange(
                        call.name, call.arguments, results.get(call.call_id, ""), call.call_id
                    )
                )
        return out

    @property
    def wants_json(self) -> bool:
        return self.response_format in ("json_object", "json_schema")


def content_text(content: Any) -> str:
    """Text of a message content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return ""


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return dict(raw)
    if isinstance(raw, str) and raw.strip():
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {"input": raw}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return {}


def _objects(raw: Any) -> list[dict[str, Any]]:
    """The objects of a JSON list (none when it is not a list)."""
    return [item for item in raw if isinstance(item, dict)] if isinstance(raw, list) else []


def _tool_calls(raw: Any) -> tuple[ToolCallSeen, ...]:
    calls: list[ToolCallSeen] = []
    for item in _objects(raw):
        fn = item.get("function")
        fn = fn if isinstance(fn, dict) else {}
        name = fn.get("name") if isinstance(fn.get("name"), str) else item.get("name")
        calls.append(
            ToolCallSeen(
                call_id=str(item.get("id") or ""),
                name=str(name or ""),
                arguments=_arguments(fn.get("arguments", item.get("arguments"))),
            )
        )
    return tuple(calls)


def _tools(raw: Any) -> tuple[ToolOffered, ...]:
    out: list[ToolOffered] = []
    for item in _objects(raw):
        inner = item.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else item
        name = fn.get("name")
        if isinstance(name, str) and name:
            params = fn.get("parameters")
            out.append(ToolOffered(name, dict(params) if isinstance(params, dict) else {}))
    return tuple(out)


def _response_format(raw: Any) -> tuple[str, str]:
    if not isinstance(raw, dict):
        return "", ""
    kind = str(raw.get("type") or "")
    schema = raw.get("json_schema")
    name = str(schema.get("name") or "") if isinstance(schema, dict) else ""
    return kind, name


def _tool_choice(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict):
        return "required"
    return ""


def read_request(request: Any) -> ChatView:
    """Read a request body; never raises (unreadable parts become empty)."""
    body = request if isinstance(request, dict) else {}
    msgs: list[Message] = []
    raw_messages = body.get("messages")
    for raw in raw_messages if isinstance(raw_messages, list) else []:
        if not isinstance(raw, dict):
            continue
        msgs.append(
            Message(
                role=str(raw.get("role") or ""),
                text=content_text(raw.get("content")),
                name=str(raw.get("name") or ""),
                tool_calls=_tool_calls(raw.get("tool_calls")),
                tool_call_id=str(raw.get("tool_call_id") or ""),
            )
        )
    kind, schema_name = _response_format(body.get("response_format"))
    return ChatView(
        model=str(body.get("model") or "sim"),
        messages=tuple(msgs),
        tools=_tools(body.get("tools")),
        tool_choice=_tool_choice(body.get("tool_choice")),
        response_format=kind,
        schema_name=schema_name,
    )


_VOLATILE_PATH = re.compile(r"(?:/tmp|/var|/private|[A-Za-z]:\\)[^\s'\"]*")


def request_digest(view: ChatView, run_key: str) -> str:
    """sha256 of the request content with run-specific noise removed.

    Tool-call ids, temporary paths and the run key itself differ from run to run without
    changing what the model is asked, so they do not enter the digest.
    """

    def clean(text: str) -> str:
        if run_key:
            text = text.replace(run_key, "<run>")
        return _VOLATILE_PATH.sub("<path>", text)

    canon = {
        "messages": [
            [
                m.role,
                clean(m.text),
                m.name,
                [
                    [c.name, json.dumps(c.arguments, sort_keys=True, default=str)]
                    for c in m.tool_calls
                ],
            ]
            for m in view.messages
        ],
        "tools": sorted(t.name for t in view.tools),
        "response_format": view.response_format,
    }
    return stable_hex(json.dumps(canon, sort_keys=True, ensure_ascii=False))
