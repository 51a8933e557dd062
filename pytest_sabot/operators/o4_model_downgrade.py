"""O4 model-downgrade: the gateway silently serves one agent from a weaker tier.

The gateway performs the swap and records, on every model_call event, the model requested,
the model that served it and whether the O4 plan routed it (``downgraded``). This operator
names the agent and its probe reports those facts: how many calls of the agent there were,
how many the weaker tier served and under which model names. ``landed`` states the fact
"a call of the agent was served by the weaker tier"; whether the cell counts as verified is
not the operator's decision but the rule version's (SPEC I21): v0.1.x verifies O4
unconditionally, as wave 1 recorded it, and v0.2.0+ requires a served downgraded call
(10.7 correction 2), both read by the scorer from the model_call events themselves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_sabot.core.models.trace import ProbeData
from pytest_sabot.operators.base import Operator, Planted


@dataclass
class ModelDowngrade(Operator):
    def downgrade_agent(self) -> str:
        return self.spec.target

    def on_model_call(self, agent: str, call_index: int, requested: str, served: str,
                      downgraded: bool) -> Planted | None:
        """The first call the gateway's downgrade plan served is where the fault was
        planted (the injection event); later ones pass."""
        if self.fired or not downgraded:
            return None
        self.planted = Planted("model", f"agent:{agent}#{call_index}", requested, served)
        return self.planted

    def probe(self, events: Sequence[Any]) -> ProbeData:
        agent = self.spec.target
        calls = [e for e in events if e.kind == "model_call" and e.component == agent]
        routed = [e for e in calls if e.data.downgraded]
        served = [e for e in routed if e.data.error is None]
        models = sorted({e.data.model_served for e in served})
        facts = (
            f"{len(calls)} call(s) of {agent}; {len(routed)} routed to the weak tier, "
            f"{len(served)} served"
        )
        if served:
            facts += f" by {', '.join(repr(m) for m in models)} (first at seq {served[0].seq})"
        return ProbeData(operator=self.id, landed=bool(served), consumed=bool(served),
                         evidence=facts)
