"""The four evidence streams of a run, kept apart and never merged.

* requests: what the agent asked (tool and arguments, as given);
* deliveries: what reached the world (a duplicated delivery shows twice);
* effects: committed state changes, with the entity before and after and its versions;
* observations: exactly what the agent was shown.

Every event carries ``seq``, one counter shared by all streams of a run, so the order of
the history is known without merging the streams; and ``at_ms``, the virtual time. Wall
time never appears here (it lives in the record's ``timings``), so two runs of one seed
have identical streams.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.lab.observation import Observation
from pytest_sabot.lab.vocabulary import Actor, EffectKind

StreamName = Literal["requests", "deliveries", "effects", "observations", "waits"]


class _Event(FrozenModel):
    seq: int = Field(ge=0, description="Position in the run's history, shared by all streams.")
    at_ms: int = Field(description="Virtual time of the event in milliseconds from run start.")


class RequestEvent(_Event):
    """One tool call as the agent asked it."""

    request_id: str = Field(description="Stable id within the run, e.g. 'r3'.")
    tool: str = Field(description="Tool name exactly as the agent gave it.")
    arguments: dict[str, Any] = Field(description="Arguments exactly as the agent gave them.")
    call_number: int = Field(ge=1, description="1-based count of requests to this tool so far.")


class DeliveryEvent(_Event):
    """One arrival of a request at the world."""

    delivery_id: str = Field(description="Stable id within the run, e.g. 'd4'.")
    request_id: str = Field(description="The request this delivery carries.")
    tool: str = Field(description="Tool the world executed.")
    arguments: dict[str, Any] = Field(description="Arguments the world received.")
    copy_number: int = Field(
        ge=1, description="1 for the first delivery of a request, 2 for a duplicate, ..."
    )
    view: Literal["authoritative", "snapshot"] = Field(
        description="'snapshot' when a read was served from an earlier committed state."
    )
    snapshot: int | None = Field(
        None, description="Index of the committed snapshot served (view 'snapshot' only)."
    )
    replayed_operation: bool = Field(
        False, description="True when the server answered from its idempotency store."
    )
    response: Observation = Field(description="What the world answered to this delivery.")
    authoritative_response: Observation | None = Field(
        None, description="For a snapshot read: what the current state would have answered."
    )


class EffectEvent(_Event):
    """One committed state change."""

    effect_id: str = Field(description="Stable id within the run, e.g. 'e2'.")
    actor: Actor = Field(description="'agent' (through a delivery) or 'approver' (the world).")
    delivery_id: str | None = Field(None, description="The delivery that caused it, if any.")
    request_id: str | None = Field(None, description="The request behind that delivery.")
    kind: EffectKind = Field(description="What changed.")
    entity: str = Field(description="'ticket:<id>' or 'notification:<id>'.")
    before: dict[str, Any] | None = Field(
        None, description="The entity before the change; None when it was created."
    )
    after: dict[str, Any] = Field(description="The entity after the change.")
    before_version: int | None = Field(None, description="Entity version before (tickets).")
    after_version: int | None = Field(None, description="Entity version after (tickets).")
    operation_key: str | None = Field(
        None, description="The operation key recorded with the write, if one was given."
    )


class ObservationEvent(_Event):
    """What the agent was shown for one request."""

    observation_id: str = Field(description="Stable id within the run, e.g. 'o3'.")
    request_id: str = Field(description="The request this answers.")
    observation: Observation = Field(description="The observation, verbatim.")


class WaitEvent(_Event):
    """A virtual-time wait the agent asked for (``context.sleep``)."""

    wait_id: str = Field(description="Stable id within the run, e.g. 'w1'.")
    ms: int = Field(ge=0, description="Virtual milliseconds waited.")


class Streams(FrozenModel):
    """The four evidence streams of one run."""

    requests: list[RequestEvent] = Field(default_factory=list, description="What was asked.")
    deliveries: list[DeliveryEvent] = Field(
        default_factory=list, description="What reached the world."
    )
    effects: list[EffectEvent] = Field(
        default_factory=list, description="What was committed."
    )
    observations: list[ObservationEvent] = Field(
        default_factory=list, description="What the agent was shown."
    )

    def deliveries_of(self, request_id: str) -> list[DeliveryEvent]:
        return [d for d in self.deliveries if d.request_id == request_id]

    def effects_of(self, request_id: str) -> list[EffectEvent]:
        return [e for e in self.effects if e.request_id == request_id]

    def observation_of(self, request_id: str) -> ObservationEvent | None:
        return next((o for o in self.observations if o.request_id == request_id), None)

    def request(self, request_id: str) -> RequestEvent | None:
        return next((r for r in self.requests if r.request_id == request_id), None)


class EvidenceRef(FrozenModel):
    """A pointer to one event of one stream."""

    stream: StreamName = Field(description="Which stream holds the event.")
    id: str = Field(description="The event's id in that stream ('r3', 'd4', 'e2', 'o3').")
    seq: int = Field(description="The event's seq, for ordering.")


def ref(event: RequestEvent | DeliveryEvent | EffectEvent | ObservationEvent | WaitEvent) -> (
        EvidenceRef):
    """The EvidenceRef of an event."""
    if isinstance(event, RequestEvent):
        return EvidenceRef(stream="requests", id=event.request_id, seq=event.seq)
    if isinstance(event, DeliveryEvent):
        return EvidenceRef(stream="deliveries", id=event.delivery_id, seq=event.seq)
    if isinstance(event, EffectEvent):
        return EvidenceRef(stream="effects", id=event.effect_id, seq=event.seq)
    if isinstance(event, ObservationEvent):
        return EvidenceRef(stream="observations", id=event.observation_id, seq=event.seq)
    return EvidenceRef(stream="waits", id=event.wait_id, seq=event.seq)


def causal_chain(streams: Streams, effect: EffectEvent) -> list[EvidenceRef]:
    """The effect, the delivery and request behind it and what the agent was shown for it."""
    refs = [ref(effect)]
    if effect.delivery_id is not None:
        delivery = next(
            (d for d in streams.deliveries if d.delivery_id == effect.delivery_id), None
        )
        if delivery is not None:
            refs.append(ref(delivery))
    if effect.request_id is not None:
        request = streams.request(effect.request_id)
        if request is not None:
            refs.append(ref(request))
        shown = streams.observation_of(effect.request_id)
        if shown is not None:
            refs.append(ref(shown))
    return sorted(refs, key=lambda r: r.seq)


def chains(streams: Streams, effects: list[EffectEvent], *extra: EvidenceRef) -> (
        list[EvidenceRef]):
    """The causal chains of several effects (plus ``extra`` refs), deduplicated, in order."""
    refs: dict[tuple[str, str], EvidenceRef] = {(r.stream, r.id): r for r in extra}
    for effect in effects:
        for r in causal_chain(streams, effect):
            refs[(r.stream, r.id)] = r
    return sorted(refs.values(), key=lambda r: r.seq)
