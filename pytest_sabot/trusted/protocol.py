"""The supervisor's wire protocol: typed messages, one JSON object per line.

A supervised run has two processes. The parent (the harness) owns the world, the evidence
and every tool; the child runs a user's callable. They speak over two private pipes, one
each way, in JSON lines; every line is one of the messages below, told apart by ``type``.
The exchange is strictly call-and-answer: the child asks, the parent answers with the same
``id``; the parent never sends anything unasked after ``start``.

::

    parent                                   child
      load {protocol, target, binding} ->
                                       <-    loaded {target, is_async}
                                             | load_failed {target, error_type, message}
      start {view, tools, models}      ->
                                       <-    tool_call {id, name, arguments | unreadable}
      tool_result {id, result}         ->
                                       <-    sleep {id, ms}
      slept {id}                       ->
      (or, to either request)
      refused {id, reason, message}    ->
                                       <-    finished {output} | failed {error_type, ...}

``view`` is whatever public view the binding needs (for the lab, its ``AgentView``);
``tools`` is the catalog the child may call (name, description, JSON Schema of the
arguments); ``models`` hands each of the child's agents its own OpenAI-compatible model
endpoint (a base URL and a credential of the run, never a provider key). Nothing else
crosses: the child is never given a fault schedule, a scenario or task file name, private
world state or rules, because no message has a field for them.

The JSON Schema of both directions is :func:`protocol_schema`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from pytest_sabot.core.models.base import FrozenModel

PROTOCOL_VERSION: Literal[1] = 1
PLAIN_BINDING = "pytest_sabot.trusted.context:plain_binding"
MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest message line either side accepts; a longer one is a protocol violation."""

RefusalReason = Literal["limit", "closed", "deadline", "invalid", "harness_failure"]
"""Why the parent refused a request.

* ``limit``: the run's own budget or (virtual) deadline is spent;
* ``closed``: the run has ended, nothing more can reach the world;
* ``deadline``: the supervisor's real-time deadline passed; the child is being stopped;
* ``invalid``: the request itself was malformed (e.g. a negative wait);
* ``harness_failure``: the parent failed while serving it (never the child's fault).
"""


AnsweredId = Annotated[int, Field(description="The id of the request answered.")]
"""The ``id`` of an answer: the request's it answers."""
RequestId = Annotated[int, Field(ge=1, description="Request id, increasing from 1.")]
"""The ``id`` of a child's request, increasing from 1 over the run."""
ErrorType = Annotated[str, Field(description="Exception class name.")]
"""The class name of the exception a failure reports."""


class Message(FrozenModel):
    """One line of the protocol, either way: a JSON object told apart by ``type``."""


# --------------------------------------------------------------------------- parent -> child


class ToolSpec(Message):
    """One tool the child may call."""

    name: str = Field(description="Tool name, as the child passes it to call_tool.")
    description: str = Field("", description="What the tool does, for models and people.")
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="JSON Schema of the arguments object."
    )
    annotations: dict[str, Any] = Field(
        default_factory=dict,
        description="Binding-specific public facts about the tool (e.g. its role).",
    )


class ModelEndpoint(Message):
    """An OpenAI-compatible model endpoint for one of the child's agents."""

    agent: str = Field(description="The agent (role) this endpoint is for, e.g. 'worker'.")
    base_url: str = Field(description="Base URL ending in /v1, served by the parent.")
    model: str = Field(description="The model name to request.")
    api_key: str = Field(
        description="A credential of the run the endpoint accepts; never a provider key."
    )
    via_pipe: bool = Field(
        False,
        description=(
            "The child cannot reach base_url (a sandbox without network): it serves the "
            "endpoint on its own loopback and carries each request over the pipe."
        ),
    )


class Load(Message):
    """First message: import this callable and its binding (nothing of the run is known)."""

    type: Literal["load"] = "load"
    protocol: int = Field(PROTOCOL_VERSION, description="Protocol version the parent speaks.")
    target: str = Field(description="'package.module:callable' to import in the child.")
    binding: str = Field(
        PLAIN_BINDING,
        description="'module:callable' that builds the child-side context from the start "
        "message and the channel (e.g. the lab's AgentContext).",
    )


class Start(Message):
    """Run the loaded callable with a context its binding builds from these public facts."""

    type: Literal["start"] = "start"
    view: dict[str, Any] = Field(
        default_factory=dict, description="The public view the binding hands the callable."
    )
    tools: list[ToolSpec] = Field(default_factory=list, description="The tool catalog.")
    models: list[ModelEndpoint] = Field(
        default_factory=list, description="One model endpoint per agent, if any."
    )


class ToolResult(Message):
    """The answer to a ``tool_call``."""

    type: Literal["tool_result"] = "tool_result"
    id: AnsweredId
    result: Any = Field(description="The tool's answer as JSON (binding-specific shape).")


class Slept(Message):
    """The answer to a ``sleep``: the wait has been accounted."""

    type: Literal["slept"] = "slept"
    id: AnsweredId


class Refused(Message):
    """The answer to a request the parent did not carry out."""

    type: Literal["refused"] = "refused"
    id: AnsweredId
    reason: RefusalReason = Field(description="Why (see RefusalReason).")
    message: str = Field(description="Explanation, as the child's exception text.")


# --------------------------------------------------------------------------- child -> parent


class Loaded(Message):
    """The callable was imported."""

    type: Literal["loaded"] = "loaded"
    target: str = Field(description="The target loaded.")
    is_async: bool = Field(description="Whether it is a coroutine function.")


class LoadFailed(Message):
    """The callable could not be imported (or is not callable); the child exits."""

    type: Literal["load_failed"] = "load_failed"
    target: str = Field(description="The target asked for.")
    error_type: ErrorType
    message: str = Field(description="What went wrong.")


class ToolCall(Message):
    """Call one tool; answered by ``tool_result`` or ``refused`` with the same id."""

    type: Literal["tool_call"] = "tool_call"
    id: RequestId
    name: str = Field(description="Tool name as the callable gave it.")
    arguments: dict[str, Any] | None = Field(
        None, description="The arguments as JSON; None when they could not be serialized."
    )
    unreadable: str | None = Field(
        None, description="repr() of arguments that are not JSON (the parent refuses them)."
    )


class Sleep(Message):
    """Wait ``ms`` milliseconds of the parent's (virtual) time; answered by ``slept``."""

    type: Literal["sleep"] = "sleep"
    id: RequestId
    ms: int = Field(ge=0, description="Milliseconds to wait.")


class Finished(Message):
    """The callable returned."""

    type: Literal["finished"] = "finished"
    output: str = Field("", description="Its own account of the run (never judged).")


class Failed(Message):
    """The callable raised."""

    type: Literal["failed"] = "failed"
    error_type: ErrorType
    message: str = Field(description="str() of the exception.")
    traceback: str = Field("", description="The formatted traceback (also in the log file).")


ToParent = Annotated[
    Loaded | LoadFailed | ToolCall | Sleep | Finished | Failed, Field(discriminator="type")
]
ToChild = Annotated[
    Load | Start | ToolResult | Slept | Refused, Field(discriminator="type")
]
Request = ToolCall | Sleep

_TO_PARENT: TypeAdapter[ToParent] = TypeAdapter(ToParent)
_TO_CHILD: TypeAdapter[ToChild] = TypeAdapter(ToChild)


class ProtocolError(Exception):
    """A line that is not one of the messages its direction allows."""


def encode(message: Message) -> bytes:
    """One message as one line of JSON (newline included)."""
    return message.model_dump_json().encode("utf-8") + b"\n"


def _decode(adapter: TypeAdapter[Any], line: bytes) -> Any:
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError(f"message of {len(line)} bytes exceeds {MAX_LINE_BYTES}")
    try:
        return adapter.validate_json(line)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "message"
        raise ProtocolError(f"not a protocol message ({where}: {first.get('msg')}): "
                            f"{line[:200]!r}") from None


def decode_to_parent(line: bytes) -> ToParent:
    """A child's line as a message (raises ProtocolError)."""
    message: ToParent = _decode(_TO_PARENT, line)
    return message


def decode_to_child(line: bytes) -> ToChild:
    """A parent's line as a message (raises ProtocolError)."""
    message: ToChild = _decode(_TO_CHILD, line)
    return message


def protocol_schema() -> dict[str, Any]:
    """JSON Schema of both directions (``to_child`` and ``to_parent``)."""
    return {
        "version": PROTOCOL_VERSION,
        "to_child": _TO_CHILD.json_schema(),
        "to_parent": _TO_PARENT.json_schema(),
    }


def jsonable(value: object) -> dict[str, Any] | None:
    """A JSON-clean copy of a mapping of arguments, or None when it is not one."""
    if not isinstance(value, dict):
        return None
    try:
        copy = json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return None
    return copy if isinstance(copy, dict) else None
