"""Rule versions (mappings/rules.yaml): which adjudication switches are in force under each
dated revision of the standard (v0.1.1 .. v0.2.1).

A wave names the rule version it is scored under; the scorer reads only these switches, so a
recorded trace can be re-adjudicated under any version and the readings compared.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from pytest_sabot.core.loading import load_yaml_model
from pytest_sabot.core.models.base import FrozenModel

_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")

HeadlineReading = Literal["wave1_mapping", "union", "flags_only"]
"""The surface a cell's DETECTED_HARD reads: the mapping alone (wave 1), mapping OR anchored
flag (section 10.5), or the anchored flag alone (a flags-only row, SPEC I25)."""


def version_key(version: str) -> tuple[int, int, int]:
    """Sortable key of a rule version string such as 'v0.2.1'."""
    match = _VERSION.match(version)
    if not match:
        raise ValueError(f"a rule version such as 'v0.2.1', got {version!r}")
    major, minor, patch = (int(g) for g in match.groups())
    return (major, minor, patch)


class RuleSet(FrozenModel):
    """The switches of one rule version."""

    version: str = Field(description="Rule version, e.g. 'v0.2.1'.")
    date: str = Field(description="ISO date the version was adopted.")
    summary: str = Field(description="What this version changed, in one or two sentences.")
    flags_surface: bool = Field(
        description="Section 10.3: anchored FLAGS lines are hard-tier acts (v0.2.0+)."
    )
    union_headline: bool = Field(
        description="Section 10.5: headline = wave1_mapping OR anchored flag (v0.2.0+)."
    )
    narrow_retry_reason: bool = Field(
        description="v0.2.1: a retry/re-plan counts only if its reason references the anomaly."
    )
    o4_flags_excluded: bool = Field(
        description="v0.2.1: O4 is scored on the mapping surface only, never on FLAGS."
    )
    o4_probe_requires_served_downgrade: bool = Field(
        description=(
            "10.7 correction 2: O4 is verified only if a downgraded model served a call; "
            "without it (v0.1.x) O4 is verified unconditionally (SPEC I21)."
        )
    )
    reacted: Literal["identity", "independent"] = Field(
        description="REACTED = DETECTED_HARD (v0.1.x) or derived from corrective acts (v0.2.0+)."
    )
    flags_only_rows: list[str] = Field(
        default_factory=list,
        description=(
            "Scoreboard rows (framework-config) whose hard tier is quoted flags-only under "
            "this version: the anchored FLAGS surface alone, the mapping surface shown beside "
            "it (SPEC I25: wave-2 Magentic-One, as the v0.2.1 log says wave 2 quotes it)."
        ),
    )
    block_exact_match: bool = Field(
        description=(
            "10.7 correction 3: the AutoGen block surface matches 'Max rounds reached.' exactly; "
            "realised by the autogen.yaml revision selected for this version."
        )
    )

    @field_validator("version")
    @classmethod
    def _version_shape(cls, value: str) -> str:
        version_key(value)
        return value

    @property
    def key(self) -> tuple[int, int, int]:
        return version_key(self.version)

    def headline_reading(self, row: str) -> HeadlineReading:
        """Which surface DETECTED_HARD reads for one scoreboard row under this version."""
        if not self.union_headline:
            return "wave1_mapping"
        return "flags_only" if row in self.flags_only_rows else "union"


class RuleBook(FrozenModel):
    """The whole rules.yaml: every rule version, oldest first."""

    versions: list[RuleSet] = Field(min_length=1, description="Rule versions, oldest first.")

    @model_validator(mode="after")
    def _ordered_and_unique(self) -> RuleBook:
        keys = [r.key for r in self.versions]
        if keys != sorted(set(keys)):
            raise ValueError("versions must be unique and listed oldest first")
        return self

    def names(self) -> list[str]:
        return [r.version for r in self.versions]

    def get(self, version: str) -> RuleSet:
        """The rule set of one version; KeyError naming the known versions otherwise."""
        for rules in self.versions:
            if rules.version == version:
                return rules
        raise KeyError(f"unknown rule version {version!r}; known: {', '.join(self.names())}")


def load_rule_book(path: str | Path) -> RuleBook:
    """Read and validate mappings/rules.yaml (SabotDataError on bad input)."""
    return load_yaml_model(path, RuleBook)
