"""The published-defect registry (cells/published-defects.yaml): instrument defects the
standard disclosed for a published wave, which that wave reproduces so that its rows are
the published instrument (SPEC I8, I86).

YAML shape::

    registered: "2026-12-01"
    defects:
      - id: t3-ground-truth-served
        disclosed: v0.2.1                  # the amendment that disclosed it
        waves: [1, 2]                      # the waves that carried it, and reproduce it
        task: T3
        serves: ground_truth_notes         # what the pipeline is handed besides the view
        description: >-
          In both published waves the T3 adapters served the task file's ground-truth
          section to the pipeline ...
        sensitivity:
          text: excluding every T3 row moves the headline median 55.0% -> 53.6%
          published_median: 0.550
          median_without: 0.536

The registry is hashed into the registration of the waves it names and of no other wave,
so registering a defect for waves 1 and 2 leaves the hash of wave 3, of a candidate and of
the lab unchanged.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.core.models.trace import TaskId

GROUND_TRUTH_MATERIAL = "ground_truth.md"
"""The material name under which a run of a wave that reproduces the published T3 defect is
handed the task file's ground-truth section; its run_start lists it among ``materials``."""


class SensitivityBound(FrozenModel):
    """The bound the standard published for the defect: the headline median with and
    without the rows the defect touches."""

    text: str = Field(description="The bound in the standard's words.")
    published_median: float = Field(ge=0, le=1, description="The published headline median.")
    median_without: float = Field(
        ge=0, le=1, description="The headline median with the defect's task left out."
    )


class PublishedDefect(FrozenModel):
    """One disclosed defect of a published instrument, reproduced in the waves it names."""

    id: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$", description="Stable id.")
    disclosed: str = Field(
        pattern=r"^v\d+\.\d+\.\d+$", description="The amendment that disclosed it, e.g. v0.2.1."
    )
    waves: list[int] = Field(min_length=1, description="The waves that carried the defect.")
    task: TaskId = Field(description="The task whose runs it touches.")
    serves: Literal["ground_truth_notes"] = Field(
        description="What the pipeline is served besides the task's public view: "
        "'ground_truth_notes', the task file's ground-truth section (every operator's "
        "ground-truth note of the task, verbatim)."
    )
    description: str = Field(description="What the defect is, in words, for every report.")
    sensitivity: SensitivityBound = Field(description="The standard's sensitivity bound.")


class PublishedDefects(FrozenModel):
    """The whole registry."""

    registered: str = Field(description="ISO date the registry was written.")
    defects: list[PublishedDefect] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_ids(self) -> PublishedDefects:
        ids = [d.id for d in self.defects]
        if len(set(ids)) != len(ids):
            raise ValueError(f"defect ids must be unique, got {ids}")
        return self

    def for_wave(self, wave: int) -> list[PublishedDefect]:
        """The defects a wave reproduces, in registry order."""
        return [d for d in self.defects if wave in d.waves]
