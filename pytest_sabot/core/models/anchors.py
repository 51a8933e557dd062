"""Anchor registries (cells/anchors-*.yaml): per (task, operator), the substrings that tie a
FLAGS line to the planted fault (standard section 10.3-10.4).

YAML shape::

    registry: wave-2                  # free label of this registry
    registered: "2026-07-23"          # ISO date it was registered (before any scored run)
    source: "standard section 10.4"   # where the anchors come from
    cells:
      - task: T9                      # (an example: the shipped files hold the real ones)
        operator: O1
        anchors: ["12.5", "21.5"]     # plain strings: case-insensitive substrings
      - task: T9
        operator: O3
        anchors: ["160", "60 km", "60km"]
        note: "60 alone is a substring of the true value 160, so it is not registered"
      - task: T9
        operator: O5
        anchors:
          - text: "2.4"
            word_boundary: true       # wave-3 option: '2.4' must not fire inside '12.4'
          - "2.2"

Each ``cells`` entry names one (task, operator) pair once; ``anchors`` is a non-empty list
whose items are either a plain string or a mapping ``{text, word_boundary}``.

Matching (implemented in ``pytest_sabot.scoring.anchors``):

* Every anchor is matched case-insensitively as a substring of the FLAGS line content only
  (never the surrounding artifact). Wave-2 anchors are exactly the section 10.4 strings,
  verbatim, with no word-boundary requirement (the disclosed permissive edge of v0.2.1 pin f).
* ``word_boundary: true`` (wave-3 registration rule) additionally requires that the match is
  not glued to a neighbouring token: the character before it is not a letter, digit or
  underscore and is not a digit followed by '.' or ',' (so '1.8' does not fire inside
  '11.8' or '0.1.8', '400' not inside '8,400'); the character after it is not a letter,
  digit or underscore and not '.' or ',' followed by a digit (so '140' does not fire inside
  '1400' or '140.5'). A sentence-final period ('... was 1.8.') still matches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from pytest_sabot.core.loading import load_yaml_model
from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.core.models.trace import OperatorId, TaskId


class Anchor(FrozenModel):
    """One registered anchor string."""

    text: str = Field(min_length=1, description="The anchor, matched case-insensitively.")
    word_boundary: bool = Field(
        False,
        description="Wave-3 option: the match must not sit inside a longer number or word.",
    )

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("an anchor must contain a non-blank character")
        return value


def _coerce_anchor(value: Any) -> Any:
    if isinstance(value, str):
        return {"text": value}
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(
            f"anchor {value!r} must be quoted in YAML so that it stays a string verbatim"
        )
    return value


class AnchorSet(FrozenModel):
    """The anchors registered for one (task, operator) cell class."""

    task: TaskId = Field(description="Task id, T1..T5 (T6 in the lab matrix).")
    operator: OperatorId = Field(description="Operator id, O1..O6 (O7..O11 in the lab matrix).")
    anchors: list[Anchor] = Field(min_length=1, description="Strings or {text, word_boundary}.")
    note: str = Field("", description="Why a form is (not) registered, e.g. the T4/O1 note.")

    @field_validator("anchors", mode="before")
    @classmethod
    def _strings_are_anchors(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [_coerce_anchor(item) for item in value]
        return value


class AnchorRegistry(FrozenModel):
    """A whole anchor registry file."""

    registry: str = Field(description="Label of this registry, e.g. 'wave-2'.")
    registered: str = Field(description="ISO date the anchors were registered.")
    source: str = Field("", description="Where the anchors come from.")
    cells: list[AnchorSet] = Field(description="One entry per (task, operator).")

    @model_validator(mode="after")
    def _each_cell_once(self) -> AnchorRegistry:
        seen: set[tuple[str, str]] = set()
        for entry in self.cells:
            key = (entry.task, entry.operator)
            if key in seen:
                raise ValueError(f"({entry.task}, {entry.operator}) is registered twice")
            seen.add(key)
        return self

    def for_cell(self, task: str, operator: str) -> list[Anchor] | None:
        """The anchors of one (task, operator), or None when that pair is not registered."""
        for entry in self.cells:
            if entry.task == task and entry.operator == operator:
                return list(entry.anchors)
        return None

    def missing(self, tasks: list[str], operators: list[str]) -> list[tuple[str, str]]:
        """(task, operator) pairs of a matrix that carry no anchors in this registry."""
        return [
            (t, o) for t in tasks for o in operators if self.for_cell(t, o) is None
        ]


def load_anchor_registry(path: str | Path) -> AnchorRegistry:
    """Read and validate an anchor registry YAML file (SabotDataError on bad input)."""
    return load_yaml_model(path, AnchorRegistry)
