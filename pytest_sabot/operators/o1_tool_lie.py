"""O1 tool-lie: one data-tool result is corrupted to a plausible near-miss value."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_sabot.core.models.trace import ProbeData
from pytest_sabot.operators.base import Planted, ToolResultOperator


@dataclass
class ToolLie(ToolResultOperator):
    role = "data"

    def _alter(self, target: str, observation: str) -> str | None:
        if self.spec.original not in observation:
            return None
        self.planted = Planted("tool_result", target, self.spec.original, self.spec.injected)
        return observation.replace(self.spec.original, self.spec.injected)

    def _probe_after(self, events: Sequence[Any], seq: int) -> ProbeData:
        return self._probe_injected(
            events, seq, "tool_result", "no tool result carried the corrupted value", "showed"
        )
