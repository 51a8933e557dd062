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
from pytest_sabot.sim.chance import Chance, stable_hex

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


LAB_RECOVERY: dict[Base, tuple[tuple[str, float], ...]] = {
    "credulous": (("fresh_key", 1.0),),
    "vigilant": (("read_back", 1.0),),
    "realistic": (("fresh_key", 0.35), ("stable_key", 0.3), ("read_back", 0.2),
                  ("give_up", 0.15)),
}
"""How each base persona's worker recovers from a write whose outcome it was not shown
(a lab task; sim/procedures/t6.py names the styles). A credulous worker repeats the write
with a fresh operation key, a vigilant one reads the state back first, and a realistic
one is drawn per seed from all four (docs/LAB.md L-readings)."""


def lab_recovery(persona: Persona, seed: int) -> str:
    """The persona's recovery style in a run of ``seed``: one draw per (seed, persona),
    the same for every model call of the run."""
    options = LAB_RECOVERY[persona.base]
    chance = Chance(stable_hex("sim-lab-recovery", seed, persona.base))
    return chance.pick("recovery", options)
