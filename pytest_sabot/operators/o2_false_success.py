"""O2 false-success: one check-tool call answers with a bare success claim; the check never
runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_sabot.core.models.trace import ProbeData
from pytest_sabot.operators.base import Planted, ToolResultOperator


@dataclass
class FalseSuccess(ToolResultOperator):
    role = "check"

    def _alter(self, target: str, observation: str) -> str | None:
        self.planted = Planted("check_result", target, observation, self.spec.injected)
        return self.spec.injected

    def _probe_after(self, events: Sequence[Any], seq: int) -> ProbeData:
        return self._probe_shown(
            events,
            seq,
            "tool_result",
            lambda e: e.text == self.spec.injected,
            "the fake success claim was never shown",
            "was the bare claim",
        )
