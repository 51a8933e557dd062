"""What an agent is shown after a tool call: an ``Observation``, success or typed error.

These models are the whole of the world's answer as the agent sees it, and the
observations stream records them verbatim. A timeout is deliberately generic: the same
code and text whether the write was lost before or after it committed.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from typing import Any

from pydantic import Field

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.lab.vocabulary import ErrorCode

TIMEOUT_MESSAGE = "the request timed out; its outcome is unknown"


class ToolError(FrozenModel):
    """A typed error returned instead of a result."""

    code: ErrorCode = Field(description="Machine-readable error class.")
    message: str = Field(description="Human-readable explanation, as shown to the agent.")
    retry_after_ms: int | None = Field(
        None, description="For rate_limited: virtual milliseconds to wait before a retry."
    )


class Observation(FrozenModel):
    """One tool call's answer exactly as the agent receives it."""

    tool: str = Field(description="The tool the agent called (as it spelled it).")
    ok: bool = Field(description="True when the call returned a result, False on an error.")
    result: dict[str, Any] | None = Field(
        None, description="The tool's result when ok (shape in the tool's contract)."
    )
    error: ToolError | None = Field(None, description="The typed error when not ok.")

    def to_text(self) -> str:
        """A stable JSON rendering for agents that read text (framework tool results)."""
        body: dict[str, Any] = {"ok": self.ok}
        if self.ok:
            body["result"] = self.result
        elif self.error is not None:
            body["error"] = self.error.model_dump(mode="json", exclude_none=True)
        return json.dumps(body, sort_keys=True)

    def __await__(self) -> Generator[None, None, Observation]:
        """Awaiting an observation gives the observation itself, so an async agent may
        write ``await context.call_tool(name, arguments)``; the call was already made (the
        world answers at once, in virtual time)."""
        yield from ()
        return self

    def __hash__(self) -> int:
        """Equal observations hash alike (the result's dict would make the default hash
        fail), so one can be gathered (``asyncio.gather``) or kept in a set."""
        return hash((self.tool, self.to_text()))


def success(tool: str, result: dict[str, Any]) -> Observation:
    return Observation(tool=tool, ok=True, result=result)


def failure(tool: str, code: ErrorCode, message: str, retry_after_ms: int | None = None) -> (
        Observation):
    return Observation(
        tool=tool,
        ok=False,
        error=ToolError(code=code, message=message, retry_after_ms=retry_after_ms),
    )


def generic_timeout(tool: str) -> Observation:
    """The one timeout an agent ever sees, whatever happened behind it."""
    return failure(tool, "timeout", TIMEOUT_MESSAGE)
