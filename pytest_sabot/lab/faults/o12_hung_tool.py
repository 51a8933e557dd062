"""O12 hung_tool: the tool never returns.

The request is recorded and then held: nothing reaches the world and no answer comes back,
so the call stays open until whoever is waiting on it gives up. The lab itself never
answers it (that is the point: the tool's own timeout does not fire). In a run of the lab
engine (virtual time) the call is still open when the run ends: execution ends
``deadline_exceeded``, with the held request named. In a framework pipeline the harness
holds the call in real time until the matrix's hang bound, the cell's deadline; only a
timeout of the pipeline's own lets it act before then (SPEC I131).
The first held call reaches the run's deadline, so an entry holds one call whatever its
``times``: every later request is refused by the deadline.

This project's own addition to the lab's faults, not part of the Sabot standard.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pytest_sabot.lab.evidence import Streams
from pytest_sabot.lab.faults.base import FaultBehaviour, FaultEntryBase
from pytest_sabot.lab.faults.call import EntryState, FaultCall, Intercept
from pytest_sabot.lab.observation import failure
from pytest_sabot.lab.vocabulary import ALL_TOOLS

HELD = "held: never delivered, never answered"


class HungToolFault(FaultEntryBase):
    """Schedule entry for O12."""

    fault: Literal["hung_tool"] = Field(description="O12: the call is held, never answered.")


def intercept(call: FaultCall, entry: HungToolFault, state: EntryState) -> Intercept:
    # The observation is never recorded nor shown: a held call has no answer.
    unanswered = failure(call.tool, "timeout", "no answer")
    return Intercept(unanswered, 0, activated=True, note=HELD, held=True)


def landed(streams: Streams, rid: str) -> str | None:
    """What the streams lack for this fault to show in request ``rid`` (None: it does)."""
    if streams.request(rid) is None:
        return "the request was not recorded"
    if streams.deliveries_of(rid):
        return "the request reached the world"
    if streams.effects_of(rid):
        return "an effect was committed"
    if streams.observation_of(rid) is not None:
        return "the agent was shown an answer"
    return None


FAULT = FaultBehaviour(entry=HungToolFault, targets=frozenset(ALL_TOOLS),
                       intercept=intercept, landed=landed,
                       shown="recorded, never delivered, never answered")
