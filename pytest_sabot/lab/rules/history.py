"""The committed history of a run as the rules read it: the world before, then each effect.

Pure helpers over a record's initial world and effects stream, so every rule judges the
whole history (an effect later repaired still happened) and never the agent's account.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_sabot.lab.evidence import EffectEvent, Streams
from pytest_sabot.lab.scenario import Expectations, PublicTask
from pytest_sabot.lab.world.entities import Notification, Ticket, WorldState


def _ticket_id(effect: EffectEvent) -> str | None:
    return effect.entity.split(":", 1)[1] if effect.entity.startswith("ticket:") else None


@dataclass(frozen=True)
class History:
    """A run's committed history and what the task asked for."""

    initial: WorldState
    streams: Streams
    task: PublicTask
    expect: Expectations

    @property
    def agent_effects(self) -> list[EffectEvent]:
        return [e for e in self.streams.effects if e.actor == "agent"]

    def ticket_before(self, ticket_id: str, seq: int) -> Ticket | None:
        """The ticket as committed just before history position ``seq``."""
        latest: Ticket | None = self.initial.tickets.get(ticket_id)
        for effect in self.streams.effects:
            if effect.seq >= seq:
                break
            if _ticket_id(effect) == ticket_id:
                latest = Ticket.model_validate(effect.after)
        return latest

    def final_tickets(self) -> dict[str, Ticket]:
        tickets = dict(self.initial.tickets)
        for effect in self.streams.effects:
            tid = _ticket_id(effect)
            if tid is not None:
                tickets[tid] = Ticket.model_validate(effect.after)
        return tickets

    def request_tickets(self) -> list[Ticket]:
        """Tickets that carry the task's request key at the end."""
        key = self.task.request_key
        return [t for t in self.final_tickets().values() if t.request_key == key]

    def is_request_ticket(self, ticket_id: str) -> bool:
        ticket = self.final_tickets().get(ticket_id)
        return ticket is not None and ticket.request_key == self.task.request_key

    def notifications(self) -> list[tuple[EffectEvent, Notification]]:
        return [(e, Notification.model_validate(e.after)) for e in self.streams.effects
                if e.kind == "notification_sent"]

    def creations(self) -> list[tuple[EffectEvent, Ticket]]:
        return [(e, Ticket.model_validate(e.after)) for e in self.streams.effects
                if e.kind == "ticket_created"]

    def ticket_id(self, effect: EffectEvent) -> str | None:
        return _ticket_id(effect)
