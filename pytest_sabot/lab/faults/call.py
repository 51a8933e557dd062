"""What a lab fault sees of one intercepted request, and what it answers.

The boundary (:mod:`pytest_sabot.lab.boundary`) hands a fault a :class:`FaultCall` for
each request its schedule entry matches, with the entry's :class:`EntryState`; the fault
answers with an :class:`Intercept`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pytest_sabot.lab.observation import Observation


@dataclass(frozen=True)
class Delivered:
    """What one delivery did in the world."""

    delivery_id: str
    response: Observation
    committed: bool  # at least one effect was committed by this delivery
    replayed_operation: bool


class FaultCall(Protocol):
    """The boundary's handle on one intercepted request."""

    @property
    def request_id(self) -> str: ...

    @property
    def tool(self) -> str: ...

    @property
    def now_ms(self) -> int: ...

    @property
    def latency_ms(self) -> int: ...

    @property
    def timeout_ms(self) -> int: ...

    def deliver(self, snapshot: int | None = None) -> Delivered:
        """Deliver the request to the world once (from an earlier snapshot for reads)."""
        ...

    def earlier_snapshots(self) -> Sequence[int]:
        """Indexes of earlier committed snapshots, newest first (the current one excluded)."""
        ...

    def read_at(self, snapshot: int | None) -> Observation:
        """What this read would answer from a snapshot (None: current), with no record."""
        ...


@dataclass
class EntryState:
    """Mutable per-run state of one schedule entry (only the boundary changes it)."""

    blocked_until_ms: int | None = None


@dataclass(frozen=True)
class Intercept:
    """A fault's decision for one request."""

    observation: Observation
    elapsed_ms: int
    activated: bool
    note: str  # what happened, or why it was suppressed
    detail: dict[str, Any] = field(default_factory=dict)
    held: bool = False
    """The call is held unanswered (O12): nothing is shown, and it is still open when the
    run's deadline is reached (``observation`` is then never recorded)."""
