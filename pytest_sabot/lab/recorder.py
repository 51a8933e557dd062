"""Appending to the four streams: one ``seq`` counter, one id counter per stream.

The recorder only appends; it never edits or merges what was recorded.
"""

from __future__ import annotations

from typing import Any

from pytest_sabot.lab.evidence import (
    DeliveryEvent,
    EffectEvent,
    ObservationEvent,
    RequestEvent,
    Streams,
    WaitEvent,
)
from pytest_sabot.lab.observation import Observation
from pytest_sabot.lab.vocabulary import Actor
from pytest_sabot.lab.world.tools import Change


class Recorder:
    """The evidence of one run as it is being written."""

    def __init__(self) -> None:
        self._seq = 0
        self.requests: list[RequestEvent] = []
        self.deliveries: list[DeliveryEvent] = []
        self.effects: list[EffectEvent] = []
        self.observations: list[ObservationEvent] = []
        self.waits: list[WaitEvent] = []

    def _next(self) -> int:
        seq = self._seq
        self._seq += 1
        return seq

    def request(self, at_ms: int, tool: str, arguments: dict[str, Any],
                call_number: int) -> RequestEvent:
        event = RequestEvent(seq=self._next(), at_ms=at_ms,
                             request_id=f"r{len(self.requests) + 1}", tool=tool,
                             arguments=arguments, call_number=call_number)
        self.requests.append(event)
        return event

    def delivery(self, at_ms: int, request: RequestEvent, copy_number: int,
                 response: Observation, *, replayed: bool, snapshot: int | None,
                 authoritative: Observation | None) -> DeliveryEvent:
        event = DeliveryEvent(
            seq=self._next(), at_ms=at_ms, delivery_id=f"d{len(self.deliveries) + 1}",
            request_id=request.request_id, tool=request.tool, arguments=request.arguments,
            copy_number=copy_number, view="authoritative" if snapshot is None else "snapshot",
            snapshot=snapshot, replayed_operation=replayed, response=response,
            authoritative_response=authoritative,
        )
        self.deliveries.append(event)
        return event

    def effect(self, at_ms: int, change: Change, actor: Actor,
               delivery: DeliveryEvent | None) -> EffectEvent:
        event = EffectEvent(
            seq=self._next(), at_ms=at_ms, effect_id=f"e{len(self.effects) + 1}", actor=actor,
            delivery_id=delivery.delivery_id if delivery else None,
            request_id=delivery.request_id if delivery else None,
            kind=change.kind, entity=change.entity, before=change.before, after=change.after,
            before_version=change.before_version, after_version=change.after_version,
            operation_key=change.operation_key,
        )
        self.effects.append(event)
        return event

    def observation(self, at_ms: int, request: RequestEvent,
                    shown: Observation) -> ObservationEvent:
        event = ObservationEvent(seq=self._next(), at_ms=at_ms,
                                 observation_id=f"o{len(self.observations) + 1}",
                                 request_id=request.request_id, observation=shown)
        self.observations.append(event)
        return event

    def wait(self, at_ms: int, ms: int) -> WaitEvent:
        event = WaitEvent(seq=self._next(), at_ms=at_ms, wait_id=f"w{len(self.waits) + 1}",
                          ms=ms)
        self.waits.append(event)
        return event

    def streams(self) -> Streams:
        return Streams(requests=list(self.requests), deliveries=list(self.deliveries),
                       effects=list(self.effects), observations=list(self.observations))
