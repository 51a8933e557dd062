"""The transaction boundary: every agent request passes here on its way to the world.

For each request the boundary records what was asked, lets the fault schedule intercept
it, delivers it (zero, one or two times) to the world, records every delivery and every
committed effect, advances virtual time, and records exactly what the agent is shown.
It also enforces the run's deadline and budget and closes the world when the run ends,
so a late call can write nothing.
"""

from __future__ import annotations

import json
import threading
import traceback
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_sabot.lab.agent import CallHeld, HarnessFailure, LimitReached, RunClosed
from pytest_sabot.lab.evidence import RequestEvent
from pytest_sabot.lab.faults.call import Delivered
from pytest_sabot.lab.observation import Observation, failure
from pytest_sabot.lab.recorder import Recorder
from pytest_sabot.lab.scenario import Scenario
from pytest_sabot.lab.schedule import FaultSchedule
from pytest_sabot.lab.vocabulary import ALL_TOOLS
from pytest_sabot.lab.world.store import World

LimitKind = Literal["deadline_exceeded", "budget_exhausted"]


@dataclass(frozen=True)
class Refused:
    """The action the boundary refused when a limit was reached."""

    kind: Literal["request", "wait"]
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    ms: int | None = None


def _jsonable(arguments: object) -> dict[str, Any] | None:
    """A JSON-clean copy of the arguments, or None when they are not a JSON object."""
    if not isinstance(arguments, Mapping):
        return None
    try:
        copy = json.loads(json.dumps(dict(arguments)))
    except (TypeError, ValueError):
        return None
    return copy if isinstance(copy, dict) else None


def check_wait(ms: object) -> None:
    """A wait is a whole number of milliseconds >= 0 (ValueError otherwise)."""
    if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
        raise ValueError(f"sleep takes a whole number of milliseconds >= 0, got {ms!r}")


class _Call:
    """The FaultCall handle for one request."""

    def __init__(self, boundary: Boundary, request: RequestEvent) -> None:
        self._b = boundary
        self._request = request
        self._copies = 0

    @property
    def request_id(self) -> str:
        return self._request.request_id

    @property
    def tool(self) -> str:
        return self._request.tool

    @property
    def now_ms(self) -> int:
        return self._b.now_ms

    @property
    def latency_ms(self) -> int:
        return self._b.scenario.world.latency_ms

    @property
    def timeout_ms(self) -> int:
        return self._b.scenario.world.timeout_ms

    def deliver(self, snapshot: int | None = None) -> Delivered:
        self._copies += 1
        world, rec, now = self._b.world, self._b.recorder, self._b.now_ms
        tool, args = self._request.tool, self._request.arguments
        if snapshot is not None:
            response = world.read_at(snapshot, tool, args)
            delivery = rec.delivery(now, self._request, self._copies, response, replayed=False,
                                    snapshot=snapshot,
                                    authoritative=world.read_at(None, tool, args))
            return Delivered(delivery.delivery_id, response, committed=False,
                             replayed_operation=False)
        outcome = world.deliver(tool, args, now)
        delivery = rec.delivery(now, self._request, self._copies, outcome.response,
                                replayed=outcome.replayed, snapshot=None, authoritative=None)
        for change in outcome.changes:
            rec.effect(now, change, "agent", delivery)
        return Delivered(delivery.delivery_id, outcome.response,
                         committed=bool(outcome.changes), replayed_operation=outcome.replayed)

    def earlier_snapshots(self) -> Sequence[int]:
        return self._b.world.earlier_snapshots()

    def read_at(self, snapshot: int | None) -> Observation:
        return self._b.world.read_at(snapshot, self._request.tool, self._request.arguments)


class Boundary:
    """Routes one run's tool calls and waits; thread-safe (frameworks may call from threads)."""

    def __init__(self, scenario: Scenario, world: World, recorder: Recorder) -> None:
        self.scenario = scenario
        self.world = world
        self.recorder = recorder
        self.schedule = FaultSchedule(list(scenario.faults))
        self.now_ms = 0
        self.calls: Counter[str] = Counter()
        self.limit: LimitKind | None = None
        self.refused: Refused | None = None
        self.failure: str | None = None
        self.held: RequestEvent | None = None  # the call a fault holds unanswered (O12)
        self.closed = False
        self._lock = threading.Lock()

    # ----------------------------------------------------------------- agent entry points

    def call_tool(self, tool: str, arguments: Mapping[str, Any]) -> Observation:
        with self._lock:
            self._admit(Refused("request", tool=str(tool), arguments=_jsonable(arguments)))
            try:
                return self._route(str(tool), arguments)
            except CallHeld:
                raise
            except Exception as exc:
                self._fail(exc)
                raise HarnessFailure(f"the harness failed routing {tool}: {exc}") from exc

    def sleep(self, ms: int) -> None:
        check_wait(ms)
        with self._lock:
            self._admit(None)
            deadline = self.scenario.limits.deadline_ms
            if self.now_ms + ms > deadline:
                self.now_ms = deadline
                self._reach("deadline_exceeded", Refused("wait", ms=ms))
            try:
                self.recorder.wait(self.now_ms, ms)
                self.now_ms += ms
                self._advance_world()
            except Exception as exc:
                self._fail(exc)
                raise HarnessFailure(f"the harness failed advancing time: {exc}") from exc

    # ----------------------------------------------------------------- harness side

    def close(self) -> None:
        """End the run: commit what the world does by now, refuse every later call."""
        with self._lock:
            if not self.closed:
                self.closed = True
                if self.failure is None:
                    self._advance_world()

    def _admit(self, pending: Refused | None) -> None:
        if self.closed:
            raise RunClosed("the run has ended")
        if self.limit is not None:
            raise LimitReached(f"the run stopped: {self.limit}")
        if pending is None:
            return
        if len(self.recorder.requests) >= self.scenario.limits.max_tool_calls:
            self._reach("budget_exhausted", pending)
        if self.now_ms >= self.scenario.limits.deadline_ms:
            self._reach("deadline_exceeded", pending)

    def _reach(self, kind: LimitKind, refused: Refused) -> None:
        self.limit = kind
        self.refused = refused
        raise LimitReached(f"the run stopped: {kind}")

    def _fail(self, exc: BaseException) -> None:
        if self.failure is None:
            self.failure = "".join(traceback.format_exception_only(type(exc), exc)).strip()

    def _advance_world(self) -> None:
        for at, change in self.world.advance(self.now_ms):
            self.recorder.effect(at, change, "approver", None)

    def _route(self, tool: str, arguments: Mapping[str, Any]) -> Observation:
        self._advance_world()
        clean = _jsonable(arguments)
        self.calls[tool] += 1
        request = self.recorder.request(
            self.now_ms, tool, clean if clean is not None else {"unreadable": repr(arguments)},
            self.calls[tool],
        )
        shown, elapsed = self._answer(request, clean)
        if self.held is request:
            # Never answered: the call is open until the deadline, which it reaches.
            self.now_ms = max(self.now_ms, self.scenario.limits.deadline_ms)
            self.limit = "deadline_exceeded"
            raise CallHeld(request.request_id, tool)
        self.now_ms += elapsed
        self.recorder.observation(self.now_ms, request, shown)
        return shown

    def _answer(self, request: RequestEvent, clean: dict[str, Any] | None) -> (
            tuple[Observation, int]):
        tool, latency = request.tool, self.scenario.world.latency_ms
        if tool not in ALL_TOOLS:
            return failure(tool, "unknown_tool", f"no tool named {tool!r}"), latency
        if tool not in self.scenario.task.capabilities:
            return failure(tool, "forbidden", f"{tool} is not among your capabilities"), latency
        if clean is None:
            return failure(tool, "invalid_arguments", "arguments must be a JSON object"), latency
        call = _Call(self, request)
        armed = self.schedule.match(request.request_id, tool, request.call_number, self.now_ms)
        if armed is None:
            delivered = call.deliver()
            return delivered.response, latency
        result = armed.operator.intercept(call, armed.entry, armed.state)
        self.schedule.settle(armed, request.request_id, result)
        if result.held:
            self.held = request
        return result.observation, result.elapsed_ms
