"""What a reviewing role found in a draft, in the form the personas speak about it.

The per-task procedures decide what is wrong; this module only fixes the shape the
embedded model's reviewing roles consume: a sentence naming the problem with the
conflicting values quoted verbatim, the values themselves, and a paraphrase that names
the kind of problem without repeating any value or name (the realistic persona's vague
register).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_sabot.sim.procedures.types import GENERIC_PARAPHRASE

__all__ = ["GENERIC_PARAPHRASE", "Finding"]


@dataclass(frozen=True)
class Finding:
    """One anomaly a reviewing role can see in its inputs."""

    summary: str  # a sentence quoting the conflicting values or names verbatim
    quotes: tuple[str, ...] = ()  # the exact conflicting values or names
    paraphrase: str = GENERIC_PARAPHRASE  # the same problem without any value or name

    @property
    def quoted(self) -> str:
        """The summary, with the quoted values appended if the summary lacks any of them."""
        missing = [q for q in self.quotes if q and q not in self.summary]
        if not missing:
            return self.summary
        return f"{self.summary} ({', '.join(repr(q) for q in missing)})"
