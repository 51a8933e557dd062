"""O6 silent-noop: a write tool reports success and the effect never happens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_sabot.core.models.trace import ProbeData
from pytest_sabot.operators.base import Operator, Planted, later_model_call


@dataclass
class SilentNoop(Operator):
    def skip_effect(self, tool: str, target: str) -> bool:
        if self.fired or target != self.spec.target:
            return False
        self.planted = Planted(
            "effect", f"effect:{tool}:{target}", self.spec.original, self.spec.injected
        )
        return True

    def _probe_after(self, events: Sequence[Any], seq: int) -> ProbeData:
        effect = next(
            (e for e in events if e.seq > seq and e.kind == "effect" and not e.data.committed), None
        )
        if effect is None:
            return ProbeData(operator=self.id, landed=False, evidence="no uncommitted effect")
        shown = next(
            (
                e
                for e in events
                if e.seq > effect.seq
                and e.kind == "tool_result"
                and e.data.call_id == effect.data.call_id
            ),
            None,
        )
        read = later_model_call(events, shown.seq if shown else effect.seq)
        return ProbeData(
            operator=self.id,
            landed=shown is not None,
            consumed=read is not None,
            evidence=f"effect seq {effect.seq} not committed; success shown"
            + (f" at seq {shown.seq}" if shown else " to nobody"),
        )
