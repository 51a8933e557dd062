"""The wave-3 anchor registration rules C1-C5, checked mechanically (SPEC S10.10.3, I26).

The rules are this project's reading of the anchor-collision review that the v0.2.1
amendment announces (the review text is not part of the standard); they decide, anchor by
anchor, whether a wave-3 anchor must be word-bounded and whether it may be registered at all.

* C1 (value faults O1, O3, O5): an anchor that would fire *glued inside* a longer token of
  another text of its own conflict — another anchor of the cell, the operator spec's original
  or injected text — must be word-bounded, and bounded it must not fire there. A match that is
  already a whole token ("sustained" in "has sustained below") is no collision.
* C2: an anchor that starts or ends with a digit is word-bounded.
* C3: generic words are dropped unless the cell would be left without an anchor.
* An anchor no rule calls for is registered without a boundary: the permissive substring of
  pin f stays the default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_sabot.core.models.anchors import Anchor
from pytest_sabot.core.operators import of_kind
from pytest_sabot.scoring.anchors import anchor_pattern

VALUE_FAULTS = of_kind("value")
"""The value faults (O1, O3, O5): their anchors are checked against their own texts (C1)."""

# C3: anchors that name the task's ordinary vocabulary rather than the fault.
GENERIC = frozenset({
    "no issues", "superseded", "rev a", "output.json", "checked against", "all six", "pytest",
    "rebate",
})
# C3: generic anchors that are their cell's only anchor and therefore stay.
KEPT_GENERIC = frozenset({"summary.txt", "solution.py", "sustained"})


@dataclass(frozen=True)
class Conflict:
    """The texts an anchor of one (task, operator) cell is checked against."""

    operator: str
    anchors: tuple[str, ...]
    original: str
    injected: str


def digit_edge(text: str) -> bool:
    """C2: the anchor starts or ends with a digit."""
    return text[:1].isdigit() or text[-1:].isdigit()


def glued_in(text: str, others: Sequence[str]) -> list[str]:
    """The texts in which ``text`` fires as a plain substring but not as a bounded match."""
    loose = anchor_pattern(Anchor(text=text))
    bounded = anchor_pattern(Anchor(text=text, word_boundary=True))
    return [
        other
        for other in others
        if other.lower() != text.lower()
        and len(loose.findall(other)) > len(bounded.findall(other))
    ]


def boundary_reasons(text: str, conflict: Conflict) -> list[str]:
    """Why an anchor must be word-bounded (empty: no rule calls for a boundary)."""
    reasons = []
    if digit_edge(text):
        reasons.append("C2: starts or ends with a digit")
    if conflict.operator in VALUE_FAULTS:
        texts = [*conflict.anchors, conflict.original, conflict.injected]
        for other in glued_in(text, texts):
            reasons.append(f"C1: would fire glued inside {other!r}")
    return reasons


def fires_on_both_sides(anchor: Anchor, conflict: Conflict) -> bool:
    """C1's check on a value fault: as registered, the anchor fires on both the correct and
    the injected text, so it cannot tell the planted fault from the clean value."""
    pattern = anchor_pattern(anchor)
    return bool(pattern.search(conflict.original) and pattern.search(conflict.injected))
