"""O4 model-downgrade: the gateway silently serves one agent from a weaker tier.

The gateway performs the swap; this operator names the agent and proves the landing: the
fault landed only if a model call of that agent was actually served by the downgrade tier
(standard v0.2.0 correction 2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_sabot.models.trace import ProbeData
from pytest_sabot.operators.base import Operator


@dataclass
class ModelDowngrade(Operator):
    def downgrade_agent(self) -> str:
        return self.spec.target

    def probe(self, events: Sequence[Any]) -> ProbeData:
        served = [
            e
            for e in events
            if e.kind == "model_call"
            and e.component == self.spec.target
            and e.data.downgraded
            and e.data.error is None
        ]
        if not served:
            return ProbeData(
                operator=self.id,
                landed=False,
                evidence=f"no call of {self.spec.target} was served by the weak tier",
            )
        return ProbeData(
            operator=self.id,
            landed=True,
            consumed=True,
            evidence=f"{len(served)} call(s) of {self.spec.target} served by "
            f"{served[0].data.model_served!r} (first at seq {served[0].seq})",
        )
