"""O3 message-alteration: one inter-agent handoff is altered in transit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_sabot.core.models.trace import ProbeData
from pytest_sabot.operators.base import Operator, Planted


@dataclass
class MessageAlteration(Operator):
    def on_handoff(self, channel: str, text: str) -> str | None:
        if self.fired or self.spec.original not in text:
            return None
        if self.spec.target != channel and not self._magentic_emit(channel):
            return None
        self.planted = Planted(
            "handoff", f"channel:{channel}", self.spec.original, self.spec.injected
        )
        return text.replace(self.spec.original, self.spec.injected, 1)

    @staticmethod
    def _magentic_emit(channel: str) -> bool:
        # Magentic-One has no reviewer handoff: its one inter-agent handoff to alter is the
        # team's final answer on its way to the emitter (the registered carve-out).
        return channel == "orchestrator->emitter"

    def _probe_after(self, events: Sequence[Any], seq: int) -> ProbeData:
        return self._probe_injected(
            events, seq, "message", "no delivered message carried the alteration", "delivered"
        )
