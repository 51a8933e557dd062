"""What the world of every kind of task holds for one attempt of a cell.

A world is made for one attempt (``task_world.py`` for the protocol and the order of its
calls): it arms the cell's operator, then builds the run context the adapter receives.
:class:`BaseWorld` keeps the cell and what the task hands its pipeline, the armed operator
and the context built, and that order; each kind of task says how its operator is armed and
how its context is built (a file task in ``pipeline_context.py``, a lab task in
``lab_bridge.py``), and how the run is finished and judged.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from pytest_sabot.core.models.cells import Cell, WaveSpec
from pytest_sabot.harness.base_context import BaseRunContext
from pytest_sabot.tasks.loader import PrivateSpec, PublicView

if TYPE_CHECKING:
    from pytest_sabot.harness.task_world import Attempt

__all__ = ["BaseWorld"]

OperatorT = TypeVar("OperatorT")
ContextT = TypeVar("ContextT", bound=BaseRunContext)


@dataclass
class BaseWorld(ABC, Generic[OperatorT, ContextT]):
    """The cell of one attempt, its wave, the task's public view and private spec; the
    operator armed for the attempt (None for a baseline) and the context built for it."""

    cell: Cell
    wave: WaveSpec
    view: PublicView
    private: PrivateSpec
    operator: OperatorT | None = field(default=None, init=False)
    _armed: bool = field(default=False, init=False)
    _ctx: ContextT | None = field(default=None, init=False)

    def arm(self) -> OperatorT | None:
        """The cell's operator, armed (None for a baseline)."""
        self.operator, self._armed = self._arm(), True
        return self.operator

    def context(self, attempt: Attempt) -> ContextT:
        """The run context the adapter receives; the world is armed first."""
        assert self._armed, "the world is armed before its context is built"
        self._ctx = self._build(attempt)
        return self._ctx

    @abstractmethod
    def _arm(self) -> OperatorT | None:
        """The cell's operator armed from the task's private spec (None for a baseline)."""

    @abstractmethod
    def _build(self, attempt: Attempt) -> ContextT:
        """The run context of ``attempt``, built around the armed operator."""
