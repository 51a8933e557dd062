"""The operator contract: one planted fault per run, at one harness-owned seam.

An operator is armed from the task's injection spec (tasks/Tn/private/operators.yaml) and
is consulted by the harness at every seam; it answers only at its own seam, and only once:
the first occurrence that matches its target is perturbed, later ones pass untouched, so a
pipeline that catches the fault can recover on its revise pass.

After the run the operator's landing probe reads the trace and says whether the fault
reached the pipeline's data path (``landed``) and whether an agent actually consumed the
faulted content afterwards (``consumed``, the strict evidence floor).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pytest_sabot.core.models.trace import OperatorId, ProbeData
from pytest_sabot.core.operators import InjectionSpec


@dataclass(frozen=True)
class Planted:
    """What an operator did at its seam, for the injection event."""

    seam: str
    target: str
    original: str
    injected: str


@dataclass
class Operator:
    """Base operator: passes everything through. Subclasses override their one seam."""

    id: OperatorId
    spec: InjectionSpec
    planted: Planted | None = field(default=None, init=False)
    injection_seq: int | None = field(default=None, init=False)

    @property
    def fired(self) -> bool:
        return self.planted is not None

    # Seams: each returns None when the operator does not act there.
    def on_tool_result(
        self, tool: str, role: str, call_number: int, observation: str
    ) -> str | None:
        return None

    def skip_effect(self, tool: str, target: str) -> bool:
        return False

    def on_handoff(self, channel: str, text: str) -> str | None:
        return None

    def worker_materials(self, stale: dict[str, str]) -> dict[str, str] | None:
        return None

    def downgrade_agent(self) -> str | None:
        return None

    def on_model_call(self, agent: str, call_index: int, requested: str, served: str,
                      downgraded: bool) -> Planted | None:
        """The gateway's record of one model call: a Planted when this call is where the
        operator's fault landed (the first call its downgrade plan served), else None."""
        return None

    def probe(self, events: Sequence[Any]) -> ProbeData:
        """Landing probe over the finished trace (events as validated trace events)."""
        if self.injection_seq is None:
            return ProbeData(operator=self.id, landed=False, evidence="the fault never fired")
        return self._probe_after(events, self.injection_seq)

    def _probe_after(self, events: Sequence[Any], seq: int) -> ProbeData:
        raise NotImplementedError

    def _probe_injected(
        self, events: Sequence[Any], seq: int, kind: str, missing: str, verb: str
    ) -> ProbeData:
        """``_probe_shown`` for a fault whose injected text stands inside the event text."""
        injected = self.spec.injected
        return self._probe_shown(
            events, seq, kind, lambda e: injected in e.text, missing, f"{verb} {injected!r}"
        )

    def _probe_shown(
        self,
        events: Sequence[Any],
        seq: int,
        kind: str,
        carries: Callable[[Any], bool],
        missing: str,
        shown_as: str,
    ) -> ProbeData:
        """Landed when an event of ``kind`` after ``seq`` carries the fault; consumed when a
        model call follows it (the faulted content was read)."""
        shown = next((e for e in events if e.seq > seq and e.kind == kind and carries(e)), None)
        if shown is None:
            return ProbeData(operator=self.id, landed=False, evidence=missing)
        read = later_model_call(events, shown.seq)
        return ProbeData(
            operator=self.id,
            landed=True,
            consumed=read is not None,
            evidence=f"{kind} seq {shown.seq} {shown_as}"
            + (f"; read by model call seq {read.seq}" if read is not None else ""),
        )


@dataclass
class ToolResultOperator(Operator):
    """An operator at the tool-result seam: it acts on the first result of its target tool
    when that tool has the ``role`` it wants (``data`` or ``check``)."""

    role: ClassVar[str]

    def on_tool_result(
        self, tool: str, role: str, call_number: int, observation: str
    ) -> str | None:
        if self.fired or role != self.role or tool != self.spec.target:
            return None
        return self._alter(f"tool:{tool}#{call_number}", observation)

    def _alter(self, target: str, observation: str) -> str | None:
        """The faulted observation (setting ``planted``), or None to pass this one."""
        raise NotImplementedError


def later_model_call(events: Sequence[Any], seq: int, agent: str | None = None) -> Any | None:
    """The first model call after ``seq`` (by ``agent`` when given)."""
    for event in events:
        if (
            event.seq > seq
            and event.kind == "model_call"
            and (agent is None or event.component == agent)
        ):
            return event
    return None
