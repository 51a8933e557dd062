"""The authoritative store: the current state plus every earlier committed snapshot.

Only the boundary calls it. Each committed change appends a snapshot; nothing is ever
rewritten, so a stale read (O11) can serve a state that really existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_sabot.lab.observation import Observation
from pytest_sabot.lab.scenario import Scenario
from pytest_sabot.lab.world.build import build_world
from pytest_sabot.lab.world.entities import WorldState
from pytest_sabot.lab.world.tools import Change, Outcome, approvals_due, execute, read


class World:
    """The helpdesk of one run."""

    def __init__(self, scenario: Scenario) -> None:
        prelude = build_world(scenario.world, {scenario.task.request_key})
        self._states: list[WorldState] = list(prelude.states)
        self._contracts = scenario.contracts
        self._rule = scenario.world.approval

    @property
    def current(self) -> WorldState:
        return self._states[-1]

    def earlier_snapshots(self) -> Sequence[int]:
        """Indexes of the committed snapshots before the current one, newest first."""
        return list(range(len(self._states) - 2, -1, -1))

    def read_at(self, snapshot: int | None, tool: str, arguments: dict[str, Any]) -> (
            Observation):
        state = self.current if snapshot is None else self._states[snapshot]
        return read(state, tool, arguments, self._contracts)

    def deliver(self, tool: str, arguments: dict[str, Any], now_ms: int) -> Outcome:
        """Execute one delivery against the current state and commit what it changed."""
        outcome = execute(self.current, tool, arguments, now_ms, self._contracts, self._rule)
        if outcome.changes:
            self._states.append(outcome.state)
        return outcome

    def advance(self, now_ms: int) -> list[tuple[int, Change]]:
        """Commit the approver's approvals due by ``now_ms``; (time, change) for each."""
        done: list[tuple[int, Change]] = []
        for at, state, change in approvals_due(self.current, now_ms):
            self._states.append(state)
            done.append((at, change))
        return done
