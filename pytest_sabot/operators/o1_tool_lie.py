"""O1 tool-lie: one data-tool result is corrupted to a plausible near-miss value."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_sabot.core.models.trace import ProbeData
from pytest_sabot.operators.base import Operator, Planted


@dataclass
class ToolLie(Operator):
    def on_tool_result(
        self, tool: str, role: str, call_number: int, observation: str
    ) -> str | None:
        if self.fired or role != "data" or tool != self.spec.target:
            return None
        if self.spec.original not in observation:
            return None
        self.planted = Planted(
            "tool_result", f"tool:{tool}#{call_number}", self.spec.original, self.spec.injected
        )
        return observation.replace(self.spec.original, self.spec.injected)

    def _probe_after(self, events: Sequence[Any], seq: int) -> ProbeData:
        return self._probe_shown(
            events,
            seq,
            "tool_result",
            lambda e: self.spec.injected in e.text,
            "no tool result carried the corrupted value",
            f"showed {self.spec.injected!r}",
        )
