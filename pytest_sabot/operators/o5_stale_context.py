"""O5 stale-context: the worker is handed a superseded revision of one material."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_sabot.core.models.trace import ProbeData
from pytest_sabot.operators.base import Operator, Planted, later_model_call


@dataclass
class StaleContext(Operator):
    def worker_materials(self, stale: dict[str, str]) -> dict[str, str] | None:
        if self.fired:
            return None
        text = stale[self.spec.target]
        self.planted = Planted(
            "material", f"material:{self.spec.target}", self.spec.original, self.spec.injected
        )
        return {self.spec.target: text}

    def _probe_after(self, events: Sequence[Any], seq: int) -> ProbeData:
        read = later_model_call(events, seq, agent="worker") or later_model_call(events, seq)
        if read is None:
            return ProbeData(
                operator=self.id,
                landed=False,
                evidence="no model call was made with the stale material",
            )
        return ProbeData(
            operator=self.id,
            landed=True,
            consumed=True,
            evidence=f"stale {self.spec.target} sent in model call seq {read.seq}",
        )
