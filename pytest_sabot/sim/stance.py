"""How a persona's reviewing roles act on what they found (pure, seeded per call).

Behaviour on a draft with findings:

* ``acts``: rejects, quoting the conflicting values (a hard-tier act under the verdict
  token protocol);
* ``remarks``: mentions the problem in prose but approves (no token: soft-tier territory);
* ``silent``: approves without mentioning it.

FLAGS style, when the anomaly-first addendum asks for a FLAGS line:

* ``quoted``: every finding with its conflicting values verbatim;
* ``paraphrased``: the problem described without the exact values;
* ``none``: ``FLAGS: none``.

``vigilant`` always acts and quotes; ``credulous`` always stays silent with ``FLAGS:
none``; ``realistic`` draws both per call. A clean draft (no findings) is approved by every
persona with ``FLAGS: none``. The weak tier of a reviewing role is a little less thorough:
vigilant-weak names only its first finding, realistic-weak acts less often.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_sabot.sim.chance import Chance
from pytest_sabot.sim.personas import Persona

Behaviour = Literal["acts", "remarks", "silent"]
FlagStyle = Literal["quoted", "paraphrased", "none"]


@dataclass(frozen=True)
class Stance:
    behaviour: Behaviour
    flags: FlagStyle
    thorough: bool = True  # False: only the first finding is named


CLEAN = Stance("silent", "none")

_REALISTIC: tuple[tuple[Behaviour, float], ...] = (
    ("acts", 0.45),
    ("remarks", 0.3),
    ("silent", 0.25),
)
_REALISTIC_WEAK: tuple[tuple[Behaviour, float], ...] = (
    ("acts", 0.25),
    ("remarks", 0.35),
    ("silent", 0.4),
)
# FLAGS style given the behaviour: one that noticed enough to act mostly quotes; one that
# stayed silent in prose still sometimes reports when the protocol asks it to.
_FLAGS_GIVEN: dict[Behaviour, tuple[tuple[FlagStyle, float], ...]] = {
    "acts": (("quoted", 0.75), ("paraphrased", 0.2), ("none", 0.05)),
    "remarks": (("quoted", 0.45), ("paraphrased", 0.35), ("none", 0.2)),
    "silent": (("quoted", 0.2), ("paraphrased", 0.2), ("none", 0.6)),
}


def choose_stance(persona: Persona, has_findings: bool, chance: Chance) -> Stance:
    """The stance of one reviewing call."""
    if not has_findings:
        return CLEAN
    if persona.base == "vigilant":
        return Stance("acts", "quoted", thorough=not persona.weak)
    if persona.base == "credulous":
        return Stance("silent", "none")
    behaviour = chance.pick("behaviour", _REALISTIC_WEAK if persona.weak else _REALISTIC)
    flags = chance.pick("flags", _FLAGS_GIVEN[behaviour])
    return Stance(behaviour, flags, thorough=chance.unit("thorough") < 0.7)
