"""Per-framework detection-act mappings (mappings/<framework>.yaml), standard section 5.

A mapping file keeps every revision of one framework's mapping side by side, each a full
restatement tagged with the rule version it takes effect in (``since``). The revision in
force for a rule version is the latest one whose ``since`` is not newer than it.

Each act row says which act it is (reject, retry_with_reason, escalate, block), which
component it belongs to, the configs it applies to, the mechanism text as published, and a
declarative matcher over trace events. The matcher vocabulary (all clauses must hold):

``event``      the trace event kind (required), e.g. ``review``, ``guardrail``, ``route``.
``component``  the event's component is one of these names.
``data``       equality on payload fields, e.g. ``{goto: revise, source: validator}``.
``less_than``  ordering between two payload fields, e.g. ``{retry_count: max_retries}``.
``verdict``    the verdict-token parse of the event text is ``approve`` or ``reject``.
``equals``     exact string equality of a field (``text`` or a payload field), no trimming.
``regex``      a Python ``re.search`` over a field (``text`` or a payload field).

``reason_from`` names where the act's recorded reason lives (``text``, ``verdict_reason``,
or ``data.<field>``); the v0.2.1 narrow retry-reason rule tests that reason.
``corrective`` marks acts that are themselves a corrective action (retry, re-dispatch,
block, escalate) for the independent REACTED derivation (10.7 correction 4).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.frameworks import adapter
from pytest_sabot.core.loading import load_yaml_model
from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.core.models.rules import version_key
from pytest_sabot.core.models.trace import ACT_SURFACE_KINDS, Config, RegisteredFramework

MappedAct = Literal["reject", "retry_with_reason", "escalate", "block"]
ActKind = Literal["reject", "retry_with_reason", "escalate", "block", "flag"]


def _act_surface(kind: str) -> str:
    """A kind a component can act through (never ``cap`` or ``surface_check``)."""
    if kind not in ACT_SURFACE_KINDS:
        listed = ", ".join(repr(k) for k in ACT_SURFACE_KINDS[:-1])
        raise ValueError(f"Input should be {listed} or {ACT_SURFACE_KINDS[-1]!r}")
    return kind


ActSurfaceKind = Annotated[
    str,
    AfterValidator(_act_surface),
    WithJsonSchema({"enum": list(ACT_SURFACE_KINDS), "type": "string"}),
]
"""An event kind a mapping row may read an act from: every kind of the trace but the
record-only ones (``pytest_sabot.core.models.trace``, the one list of kinds)."""
Scalar = str | int | float | bool | None

_REASON_FROM = re.compile(r"^(text|verdict_reason|data\.[A-Za-z_][A-Za-z0-9_]*)$")


class Matcher(FrozenModel):
    """Which trace events are an occurrence of an act row (every clause must hold)."""

    event: ActSurfaceKind = Field(description="Trace event kind.")
    component: list[str] | None = Field(None, description="Allowed event components.")
    data: dict[str, Scalar] = Field(default_factory=dict, description="Payload equalities.")
    less_than: dict[str, str] = Field(
        default_factory=dict, description="Payload field -> payload field it must be below."
    )
    verdict: Literal["approve", "reject"] | None = Field(
        None, description="Verdict-token parse of the event text."
    )
    equals: dict[str, str] = Field(
        default_factory=dict, description="Field ('text' or payload) -> exact string."
    )
    regex: dict[str, str] = Field(
        default_factory=dict, description="Field ('text' or payload) -> re.search pattern."
    )

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: dict[str, str]) -> dict[str, str]:
        for field, pattern in value.items():
            try:
                re.compile(pattern)
            except re.error as err:
                raise ValueError(f"regex for {field!r} does not compile: {err}") from err
        return value


class ActRow(FrozenModel):
    """One row of a per-act mapping table (act -> mechanism)."""

    id: str = Field(description="Row id, unique within the revision, e.g. 'reject-reviewer'.")
    act: MappedAct = Field(description="Which hard-tier act this mechanism records.")
    component: str = Field(description="The own-check component, e.g. reviewer, validator.")
    configs: list[Config] = Field(min_length=1, description="Configs the row applies to.")
    mechanism: str = Field(description="The mechanism as published in section 5.")
    match: Matcher = Field(description="Declarative matcher over trace events.")
    reason_from: str = Field(
        "text", description="Where the recorded reason lives: text, verdict_reason, data.<f>."
    )
    corrective: bool = Field(
        description="The act is itself corrective (retry, re-dispatch, block, escalate)."
    )
    since: str | None = Field(None, description="Revision that introduced the row, if later.")

    @field_validator("reason_from")
    @classmethod
    def _reason_shape(cls, value: str) -> str:
        if not _REASON_FROM.match(value):
            raise ValueError("reason_from is 'text', 'verdict_reason' or 'data.<field>'")
        return value


class FlagsSurface(FrozenModel):
    """The anomaly-first FLAGS act (section 10) on this framework."""

    configs: list[Config] = Field(min_length=1, description="Configs carrying the protocol.")
    component: str = Field(description="Where the FLAGS line is produced.")
    mechanism: str = Field(description="How the FLAGS line reaches the trace.")


class MappingRevision(FrozenModel):
    """One framework's mapping as in force from one rule version on."""

    framework: RegisteredFramework = Field(description="Framework (filled in from the file).")
    since: str = Field(description="Rule version this revision takes effect in.")
    date: str = Field(description="ISO date of the revision.")
    note: str = Field("", description="What changed in this revision and why.")
    counted_surfaces: list[str] = Field(description="Counted surfaces, as published.")
    acts: list[ActRow] = Field(min_length=1, description="The per-act mapping rows.")
    flags: FlagsSurface | None = Field(None, description="The FLAGS surface (v0.2.0+).")

    @field_validator("since")
    @classmethod
    def _version_shape(cls, value: str) -> str:
        version_key(value)
        return value

    @model_validator(mode="after")
    def _unique_rows(self) -> MappingRevision:
        ids = [row.id for row in self.acts]
        if len(ids) != len(set(ids)):
            raise ValueError("act row ids must be unique within a revision")
        return self

    def rows_for(self, config: str) -> list[ActRow]:
        """The act rows that apply to one config, in file order."""
        return [row for row in self.acts if config in row.configs]


class MappingFile(FrozenModel):
    """A whole mappings/<framework>.yaml: every revision, oldest first."""

    framework: RegisteredFramework = Field(description="The framework this file maps.")
    revisions: list[MappingRevision] = Field(
        min_length=1, description="Every revision, oldest first, each a full restatement."
    )

    @model_validator(mode="before")
    @classmethod
    def _framework_into_revisions(cls, raw: Any) -> Any:
        if isinstance(raw, dict) and isinstance(raw.get("revisions"), list):
            fw = raw.get("framework")
            raw = dict(raw)
            raw["revisions"] = [
                {"framework": fw, **rev} if isinstance(rev, dict) and "framework" not in rev
                else rev
                for rev in raw["revisions"]
            ]
        return raw

    @model_validator(mode="after")
    def _consistent(self) -> MappingFile:
        keys = [version_key(r.since) for r in self.revisions]
        if keys != sorted(set(keys)):
            raise ValueError("revisions must have unique 'since' versions, oldest first")
        for rev in self.revisions:
            if rev.framework != self.framework:
                raise ValueError(f"revision {rev.since} names framework {rev.framework}")
        return self

    def for_rules(self, version: str) -> MappingRevision:
        """The latest revision whose ``since`` is not newer than ``version``."""
        wanted = version_key(version)
        chosen = [r for r in self.revisions if version_key(r.since) <= wanted]
        if not chosen:
            raise KeyError(f"{self.framework} has no mapping revision in force at {version}")
        return chosen[-1]


def load_mapping_file(path: str | Path) -> MappingFile:
    """Read and validate one mapping file (SabotDataError naming file and field)."""
    return load_yaml_model(path, MappingFile)


def load_mapping(root: str | Path, framework: str, rules_version: str) -> MappingRevision:
    """The revision in force at ``rules_version`` of the framework's mapping file: the one
    its adapter declares, ``<root>/mappings/<framework>.yaml`` unless it ships its own."""
    path = adapter(framework).mapping_path(Path(root))
    mapping = load_mapping_file(path)
    if mapping.framework != framework:
        raise SabotDataError(path, "framework", f"{framework!r} (the framework it maps)",
                             mapping.framework)
    try:
        return mapping.for_rules(rules_version)
    except (KeyError, ValueError) as err:
        raise SabotDataError(path, "revisions", f"a revision in force at {rules_version}") from err
