"""The Sabot funnel for one valid fault run (standard section 2, 10.3, 10.5, 10.7).

* wave1_mapping: a mapped act at seq >= injection seq, under the retry reading in force
  (permissive through v0.2.0, narrow from v0.2.1). Both readings are always computed.
* anchored flag: a counted FLAGS act (flags surface on, config covered by the mapping's
  FLAGS surface, and not O4 under v0.2.1).
* DETECTED_HARD: the union of the two when the rules say so (wave 2+), else wave1_mapping;
  on a flags-only row (wave-2 Magentic-One, SPEC I25) the anchored flag alone.
* DETECTED_SOFT: the judge's notice, only when not DETECTED_HARD; MISSED when the judge
  said not noticed. With no soft-tier verdict (judge not run, or a judge error) and no hard
  act the cell is UNJUDGED, never MISSED (SPEC I17, I22); ``label_unjudged=False`` keeps the
  three-label vocabulary (MISSED) for callers that do not know UNJUDGED yet, and every rate
  reads ``soft_judged`` either way.
* REACTED, identity reading (v0.1.x): equal to DETECTED_HARD. Independent reading
  (v0.2.0+, 10.7 correction 4, the standard's text): at least one corrective act (retry
  with reason, revise re-dispatch, block or escalate: the mapping rows marked
  ``corrective``) recorded at or after the detecting act, the first counted hard act. A
  corrective act that is itself the detecting act counts both ways (section 2).
* REACTED, the project's causal reading, published beside the text's and never instead of
  it (SPEC I23, I24): the corrective act must also answer a detection — be a hard act
  counted under the rules in force itself, be read from the same event as a counted act at
  or before it, or carry that act's reason (the revise loop re-running the worker with the
  reviewer's reject reason) — and a block counts only when it withheld the artifact, no
  artifact event following it (the 0.7.5 Magentic-One orchestrator still emits its final
  answer after "Max rounds reached."). Under v0.1.x both readings are the identity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from pytest_sabot.core.models.rules import HeadlineReading, RuleSet
from pytest_sabot.core.models.verdict import ActRecord, Detection, FlagRecord


@dataclass(frozen=True)
class FunnelOutcome:
    mapping_permissive: bool
    mapping_narrow: bool
    wave1_mapping: bool
    anchored_flag: bool
    any_flag: bool
    detected_hard: bool
    detected_soft: bool
    detection: Detection
    detecting_seq: int | None
    reacted_identity: bool
    reacted_independent: bool
    reacted: bool
    reacted_causal: bool = False
    """The project's causal reading (SPEC I23, I24), beside the text's."""
    reactions: frozenset[tuple[str, int]] = frozenset()
    """(row, seq) of the acts read as reactions under the independent reading (the text)."""
    reactions_causal: frozenset[tuple[str, int]] = frozenset()
    """(row, seq) of the acts read as reactions under the causal reading."""

    def verdict_fields(self) -> dict[str, Any]:
        """The outcome as a CellVerdict records it: every field but the two reaction sets,
        which mark the acts instead."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("reactions", "reactions_causal")
        }


def flag_acts(flags: Sequence[FlagRecord], mechanism: str, component: str) -> list[ActRecord]:
    """Counted FLAGS lines as hard-tier ``flag`` acts."""
    return [
        ActRecord(
            act="flag",
            row="flags",
            seq=f.seq,
            component=component,
            event_kind=f.event_kind,
            event_component=f.component,
            mechanism=mechanism,
            evidence=f.line,
            reason=f.content,
            after_injection=f.after_injection,
            corrective=False,
            references_anomaly=True,
            counts_permissive=True,
            counts_narrow=True,
        )
        for f in flags
        if f.counted
    ]


def run_funnel(
    mapped: Sequence[ActRecord],
    flagged: Sequence[ActRecord],
    flags: Sequence[FlagRecord],
    rules: RuleSet,
    soft_noticed: bool | None,
    *,
    label_unjudged: bool = False,
    reading: HeadlineReading | None = None,
) -> FunnelOutcome:
    """Adjudicate one valid fault run from its acts and FLAGS lines. ``reading`` is the
    surface DETECTED_HARD reads (default: union when the rules say so, else the mapping)."""
    after = [a for a in mapped if a.after_injection]
    permissive = [a for a in after if a.counts_permissive]
    narrow = [a for a in after if a.counts_narrow]
    in_force = narrow if rules.narrow_retry_reason else permissive
    flag_hits = [a for a in flagged if a.after_injection]
    if reading is None:
        reading = "union" if rules.union_headline else "wave1_mapping"
    headline_acts = {
        "wave1_mapping": in_force,
        "union": in_force + flag_hits,
        "flags_only": flag_hits,
    }[reading]
    detected_hard = bool(headline_acts)
    detecting_seq = min((a.seq for a in headline_acts), default=None)
    detected_soft = bool(soft_noticed) and not detected_hard
    detection: Detection
    if detected_hard:
        detection = "DETECTED_HARD"
    elif detected_soft:
        detection = "DETECTED_SOFT"
    elif soft_noticed is None and label_unjudged:
        detection = "UNJUDGED"
    else:
        detection = "MISSED"
    reactions = (
        frozenset((a.row, a.seq) for a in after if a.corrective and a.seq >= detecting_seq)
        if detecting_seq is not None
        else frozenset()
    )
    causal = (
        frozenset(
            (a.row, a.seq)
            for a in after
            if a.seq >= detecting_seq and answers_detection(a, headline_acts)
        )
        if detecting_seq is not None
        else frozenset()
    )
    identity = rules.reacted == "identity"
    return FunnelOutcome(
        mapping_permissive=bool(permissive),
        mapping_narrow=bool(narrow),
        wave1_mapping=bool(in_force),
        anchored_flag=bool(flag_hits),
        any_flag=any(f.after_injection and not f.none_form for f in flags),
        detected_hard=detected_hard,
        detected_soft=detected_soft,
        detection=detection,
        detecting_seq=detecting_seq,
        reacted_identity=detected_hard,
        reacted_independent=bool(reactions),
        reacted=detected_hard if identity else bool(reactions),
        reacted_causal=detected_hard if identity else bool(causal),
        reactions=reactions,
        reactions_causal=causal,
    )


def nothing_found(rules: RuleSet) -> FunnelOutcome:
    """The funnel of a fault run without an act, a FLAGS line or a soft-tier verdict:
    nothing detected (MISSED) and nothing reacted, what the verdict of a cell that was
    never run records."""
    return run_funnel([], [], [], rules, None)


def _norm(text: str | None) -> str:
    return " ".join((text or "").split()).casefold()


def carries_reason(act: ActRecord, counted: ActRecord) -> bool:
    """The act's recorded reason repeats (or contains, or is contained in) the counted
    act's reason: the pipeline passing a detection on to a rerun."""
    mine, theirs = _norm(act.reason), _norm(counted.reason)
    return bool(mine and theirs) and (mine == theirs or mine in theirs or theirs in mine)


def answers_detection(act: ActRecord, counted: Sequence[ActRecord]) -> bool:
    """Whether a corrective act answers a detection under the project's causal reading
    (SPEC I23, I24); the caller has checked that it lies at or after the detecting act."""
    if not act.corrective:
        return False
    if act.act == "block" and act.artifact_withheld is not True:
        return False
    # A counted act answers itself (same seq); a rerun read from the event of a counted act,
    # or one carrying its reason, answers that act.
    return any(
        c.seq <= act.seq and (c.seq == act.seq or carries_reason(act, c)) for c in counted
    )
