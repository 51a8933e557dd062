"""The child-side context a callable receives when no richer binding is asked for.

A binding turns the ``start`` message and the channel into the object the user's callable
is called with, and says how its return value becomes the recorded output. The lab has its
own binding (``pytest_sabot.lab.trusted:child_binding``, the lab's ``AgentContext``); this
one is framework- and lab-neutral: the public view as JSON, the tool catalog, one model
endpoint per agent, ``call_tool`` (JSON in, JSON out) and ``sleep``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_sabot.trusted.channel import ChildChannel
from pytest_sabot.trusted.protocol import ModelEndpoint, Start, ToolSpec


@dataclass(frozen=True)
class Bound:
    """What a binding returns: the callable's argument and how to read its result."""

    context: Any
    output: Callable[[Any], str]


def output_text(result: Any) -> str:
    """A result as the recorded output: ``result.output`` if it is a string, '' for None."""
    if result is None:
        return ""
    own = getattr(result, "output", None)
    return own if isinstance(own, str) else str(result)


class TrustedContext:
    """What a callable run under the plain binding receives."""

    def __init__(self, start: Start, channel: ChildChannel) -> None:
        self._view = dict(start.view)
        self._tools = tuple(start.tools)
        self._models = {m.agent: m for m in start.models}
        self._channel = channel

    @property
    def view(self) -> dict[str, Any]:
        """The public view (a copy)."""
        return dict(self._view)

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        return self._tools

    def model(self, agent: str) -> ModelEndpoint:
        """The model endpoint of one agent (KeyError when the parent gave it none)."""
        return self._models[agent]

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """Call a tool through the parent; raises Refusal when the parent refuses."""
        return self._channel.call_tool(name, dict(arguments or {}))

    def sleep(self, ms: int) -> None:
        """Wait ``ms`` milliseconds of the parent's clock."""
        self._channel.sleep(ms)


def plain_binding(start: Start, channel: ChildChannel) -> Bound:
    return Bound(TrustedContext(start, channel), output_text)
