"""Persona names of the embedded model and what each one means.

A persona is a base temperament plus a tier. The base decides how the reviewing roles
(reviewer, guardrail, orchestrator) act on anomalies they find; the weak tier is the O4
downgrade target: a weak worker makes its task's downgrade mistake, and weak reviewing
roles are a little less thorough. All of it is a fixture of the embedded model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_sabot.core.model_spec import parse_judge

Base = Literal["vigilant", "credulous", "realistic"]

BASES: tuple[Base, ...] = ("vigilant", "credulous", "realistic")
PERSONAS: tuple[str, ...] = (*BASES, *(f"{b}-weak" for b in BASES))
WEAK_SUFFIX = "-weak"


@dataclass(frozen=True)
class Persona:
    """One persona: ``base`` temperament and whether it is the weak (O4) tier."""

    base: Base
    weak: bool

    @property
    def name(self) -> str:
        return self.base + (WEAK_SUFFIX if self.weak else "")


def parse_persona(name: str) -> Persona:
    """Read a persona name ('realistic', 'sim:vigilant-weak', ...); ValueError if unknown."""
    bare = name.strip().lower()
    if ":" in bare:  # a whole spec, e.g. 'sim:vigilant-weak'
        spec = parse_judge(bare)
        bare = spec.name if spec.is_sim else bare
    weak = bare.endswith(WEAK_SUFFIX)
    if weak:
        bare = bare[: -len(WEAK_SUFFIX)]
    for base in BASES:
        if bare == base:
            return Persona(base=base, weak=weak)
    raise ValueError(
        f"unknown embedded-model persona {name!r}: expected one of {', '.join(PERSONAS)}"
    )
