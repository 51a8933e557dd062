"""What every lab fault shares: its schedule entry, the boundary it acts at, its coverage.

A fault acts at the transaction boundary between an agent's request and the world
(:mod:`pytest_sabot.lab.boundary`). When the schedule matches a request, the boundary hands
the fault a :class:`FaultCall`; the fault decides what reaches the world (zero, one or two
deliveries, from the authoritative state or an earlier snapshot) and what the agent is
shown, and says whether it activated or was suppressed (and why). Each fault also has a
landing probe: a pure check over the recorded streams that the activation really shows
in the evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.lab.evidence import Streams
from pytest_sabot.lab.faults.call import EntryState, FaultCall, Intercept
from pytest_sabot.lab.vocabulary import FaultKind, LabOperatorId, ToolName

CoverageStatus = Literal["planned", "matched", "activated", "suppressed"]


class FaultEntryBase(FrozenModel):
    """Where one fault may fire: the ``call``-th request to ``tool`` and the ``times - 1``
    requests to it that follow."""

    if TYPE_CHECKING:  # every fault's entry declares its kind as a Literal field
        fault: str

    id: str = Field(
        pattern=r"^[a-z0-9][a-z0-9-]*$",
        description="Name of this schedule entry in the run record (lowercase, dashes).",
    )
    tool: ToolName = Field(description="The tool whose requests the fault may intercept.")
    call: int = Field(1, ge=1, description="1-based number of the first request it may hit.")
    times: int = Field(1, ge=1, description="How many consecutive requests it may hit.")
    required: bool = Field(
        True, description="Whether the run is inconclusive unless this fault activates."
    )

    def in_window(self, call_number: int) -> bool:
        return self.call <= call_number < self.call + self.times


class Activation(FrozenModel):
    """One request the fault acted on."""

    request_id: str = Field(description="The request it intercepted.")
    note: str = Field(description="What the fault did.")
    detail: dict[str, Any] = Field(default_factory=dict, description="Fault-specific facts.")


class Suppression(FrozenModel):
    """One matched request the fault could not act on."""

    request_id: str = Field(description="The matched request.")
    reason: str = Field(description="Why the fault did not act.")


class EntryAccount(FrozenModel):
    """An account of one schedule entry, named by its id and fault kind."""

    id: str = Field(description="The schedule entry's id.")
    fault: FaultKind = Field(description="The fault kind.")


class FaultCoverage(EntryAccount):
    """What became of one schedule entry in a run."""

    operator: LabOperatorId = Field(description="The operator id (O7 and above).")
    tool: str = Field(description="The tool it targets.")
    required: bool = Field(description="Whether the gate needs it to activate.")
    status: CoverageStatus = Field(
        description="'activated' if it acted at least once, else 'suppressed' if a match "
        "was refused, else 'matched', else 'planned' (never matched)."
    )
    matched: list[str] = Field(default_factory=list, description="Request ids it matched.")
    activations: list[Activation] = Field(default_factory=list, description="Where it acted.")
    suppressions: list[Suppression] = Field(
        default_factory=list, description="Where it matched but did not act, with reasons."
    )
    note: str = Field("", description="For 'planned': why nothing matched.")


def coverage_status(matched: Sequence[str], activations: Sequence[Activation],
                    suppressions: Sequence[Suppression]) -> CoverageStatus:
    if activations:
        return "activated"
    if suppressions:
        return "suppressed"
    return "matched" if matched else "planned"


class Probe(FrozenModel):
    """A landing probe's reading: did each activation show in the evidence?"""

    landed: bool = Field(description="True when every activation shows in the streams.")
    evidence: str = Field(description="What the probe found (or what was missing).")


ProbeFn = Callable[[Streams, FaultCoverage], Probe]
LandedFn = Callable[[Streams, str], str | None]
InterceptFn = Callable[[FaultCall, Any, EntryState], Intercept]
HoldsFn = Callable[[EntryState, int], bool]


def _never(state: EntryState, now_ms: int) -> bool:
    return False


@dataclass(frozen=True)
class FaultBehaviour:
    """What one lab fault module defines: its schedule entry model, the tools it may act on,
    how it acts and how it proves it landed. Its id, kind and summary are its declaration's
    (core/operators.py), which names this object as ``fault``.

    Its landing probe reads each activation's request in the streams: ``landed(streams,
    request_id)`` says what is missing there (None: it shows), ``shown`` what a landed
    activation shows; every activation must land."""

    entry: type[FaultEntryBase]
    targets: frozenset[str]
    intercept: InterceptFn
    landed: LandedFn
    shown: str
    # Whether the entry keeps hitting requests outside its window (the rate limiter's
    # retry window); the default never does.
    holds: HoldsFn = _never

    def probe(self, streams: Streams, coverage: FaultCoverage) -> Probe:
        """The landing probe: every activation's request shows the fault in the streams."""
        return probe_each(streams, coverage, self.landed, self.shown)


@dataclass(frozen=True)
class FaultOperator:
    """One declared lab fault: its ids and summary (from its declaration), where it may
    act, how it acts and how it proves it landed."""

    kind: FaultKind
    operator: LabOperatorId
    targets: frozenset[str]
    summary: str
    intercept: InterceptFn
    probe: ProbeFn
    holds: HoldsFn = _never


def probe_each(streams: Streams, coverage: FaultCoverage, landed: LandedFn,
               shown: str) -> Probe:
    """Run ``landed`` per activation (it returns what is missing, or None); all must land."""
    if not coverage.activations:
        return Probe(landed=False, evidence="the fault never activated")
    for activation in coverage.activations:
        missing = landed(streams, activation.request_id)
        if missing is not None:
            return Probe(landed=False, evidence=f"{activation.request_id}: {missing}")
    ids = ", ".join(a.request_id for a in coverage.activations)
    return Probe(landed=True, evidence=f"{ids}: {shown}")
