"""Seeded, reproducible choices for the embedded model.

Every choice is a pure function of a stable key: the run's seed, the persona, the agent,
a digest of the request content, and a label naming the decision. Nothing depends on the
clock or on Python's per-process ``hash()``, so the same request always gets the same
answer, in any process, on any machine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


def stable_hex(*parts: object) -> str:
    """sha256 hex digest of the parts joined with a separator that cannot occur in ints."""
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Chance:
    """A source of reproducible draws for one model call."""

    key: str

    @classmethod
    def for_call(cls, *, seed: int, persona: str, agent: str, digest: str) -> Chance:
        return cls(stable_hex("sim-chance", seed, persona, agent, digest))

    def unit(self, label: str) -> float:
        """A number in [0, 1) for the decision named ``label``."""
        return int(stable_hex(self.key, label)[:13], 16) / float(1 << 52)

    def pick(self, label: str, options: Sequence[tuple[T, float]]) -> T:
        """One option, chosen with the given (positive) weights."""
        if not options:
            raise ValueError("pick needs at least one option")
        total = sum(w for _, w in options)
        x = self.unit(label) * total
        for value, weight in options:
            if x < weight:
                return value
            x -= weight
        return options[-1][0]
