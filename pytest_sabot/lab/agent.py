"""The agent-facing side of the lab: all an agent ever receives, and the two calls it makes.

An agent is a callable taking an :class:`AgentContext`. It gets the public task, the tool
names it may call (its capabilities) and the tool catalog (the published contracts); it
reaches the world only through ``context.call_tool(name, arguments)`` and waits only
through ``context.sleep(ms)``, which advances virtual time. It never sees the fault
schedule, the scenario file, the private world or the rules. This module imports no
agent framework, so any framework's tool functions can wrap these two calls.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pytest_sabot.lab.catalog import ToolContract
from pytest_sabot.lab.observation import Observation
from pytest_sabot.lab.scenario import PublicTask
from pytest_sabot.trusted.report import ProcessReport


class LimitReached(Exception):
    """The run's virtual deadline or tool-call budget is spent; no more calls are accepted."""


class RunClosed(LimitReached):
    """The run has ended; a late call can no longer reach the world."""


class CallHeld(LimitReached):
    """A fault holds this call unanswered (a hung tool, O12): it never returns, and the
    run's deadline is reached while it is open. ``request_id`` names the held request."""

    def __init__(self, request_id: str, tool: str) -> None:
        super().__init__(f"the run stopped: deadline_exceeded while {request_id} ({tool}) "
                         "was held unanswered")
        self.request_id = request_id
        self.tool = tool


class HarnessFailure(Exception):
    """The harness itself failed while routing a call (never the agent's fault)."""


class AgentStopped(Exception):
    """The harness stopped the agent from outside before it returned.

    Raised by an agent's runner (never by the agent itself) when execution ended for a
    reason the boundary did not see: a supervisor's real-time deadline
    (``deadline_exceeded``) or a client that went away (``cancelled``). The engine records
    ``status`` and ``detail`` as they are.
    """

    def __init__(self, status: Literal["deadline_exceeded", "cancelled"], detail: str) -> None:
        super().__init__(detail)
        self.status: Literal["deadline_exceeded", "cancelled"] = status
        self.detail = detail


class AgentView(BaseModel):
    """Exactly what an agent is given before its first call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: PublicTask = Field(description="The public request.")
    capabilities: list[str] = Field(description="Tools the agent may call.")
    catalog: list[ToolContract] = Field(description="The published contracts of those tools.")


@dataclass(frozen=True)
class AgentResult:
    """The agent's own account of its run: recorded, never used to judge it."""

    output: str = ""


class Waited:
    """What ``context.sleep`` returns: nothing to read, and awaitable, so an async agent
    may write ``await context.sleep(ms)`` (the wait was already made, in virtual time)."""

    __slots__ = ()

    def __await__(self) -> Generator[None, None, None]:
        yield from ()

    def __repr__(self) -> str:
        return "Waited()"


WAITED = Waited()

CallTool = Callable[[str, Mapping[str, Any]], Observation]
Sleep = Callable[[int], None]


class AgentContext:
    """What one agent run receives from the harness."""

    def __init__(self, view: AgentView, call_tool: CallTool, sleep: Sleep) -> None:
        self._view = view
        self._call_tool = call_tool
        self._sleep = sleep

    @property
    def task(self) -> PublicTask:
        return self._view.task

    @property
    def capabilities(self) -> tuple[str, ...]:
        return tuple(self._view.capabilities)

    @property
    def catalog(self) -> tuple[ToolContract, ...]:
        return tuple(self._view.catalog)

    @property
    def view(self) -> AgentView:
        return self._view

    def contract(self, tool: str) -> ToolContract | None:
        return next((c for c in self._view.catalog if c.name == tool), None)

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> Observation:
        """Route one tool call to the world; returns what the agent is shown. The answer
        is also awaitable (to itself): an async agent may ``await`` the call."""
        return self._call_tool(name, dict(arguments or {}))

    def sleep(self, ms: int) -> Waited:
        """Wait ``ms`` milliseconds of virtual time (returns at once in real time); the
        result may be awaited (``await context.sleep(ms)``) and holds nothing."""
        self._sleep(ms)
        return WAITED

    def briefing(self) -> str:
        """The view as one JSON text, for agents that read text (model prompts)."""
        return json.dumps(self._view.model_dump(mode="json"), indent=2, sort_keys=True)


AgentOutput = AgentResult | str | None
AgentFn = Callable[[AgentContext], AgentOutput | Awaitable[AgentOutput]]
AgentKind = Literal["scripted", "python", "framework", "mcp"]


@dataclass(frozen=True)
class LabAgent:
    """An agent the engine can run: a name for the record and the callable.

    ``process`` is asked once, after the agent loop, for the supervisor's report when the
    agent ran in a supervised child process (``pytest_sabot.lab.trusted``).
    """

    name: str
    kind: AgentKind
    run: AgentFn
    fixture: bool = False  # True: an acceptance fixture, never a measurement of a model
    process: Callable[[], ProcessReport | None] | None = None
