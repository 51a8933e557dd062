"""The Sabot funnel for one valid fault run (standard section 2, 10.3, 10.5, 10.7).

* wave1_mapping: a mapped act at seq >= injection seq, under the retry reading in force
  (permissive through v0.2.0, narrow from v0.2.1). Both readings are always computed.
* anchored flag: a counted FLAGS act (flags surface on, config covered by the mapping's
  FLAGS surface, and not O4 under v0.2.1).
* DETECTED_HARD: the union of the two when the rules say so (wave 2+), else wave1_mapping.
* DETECTED_SOFT: the judge's notice, only when not DETECTED_HARD; MISSED when the judge
  said not noticed. With no soft-tier verdict (judge not run, or a judge error) and no hard
  act the cell is UNJUDGED, never MISSED (SPEC I17, I22); ``label_unjudged=False`` keeps the
  three-label vocabulary (MISSED) for callers that do not know UNJUDGED yet, and every rate
  reads ``soft_judged`` either way.
* REACTED, identity reading (v0.1.x): equal to DETECTED_HARD. Independent reading
  (v0.2.0+): some corrective mapped act (retry with reason, revise re-dispatch, block,
  escalate; the rows marked ``corrective``) recorded at or after the detecting act, the
  first counted hard act. A corrective act need not itself count as a detection (a stall
  re-plan after a detection is still a rerun); an act that is both counts for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_sabot.models.rules import RuleSet
from pytest_sabot.models.verdict import ActRecord, Detection, FlagRecord


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
) -> FunnelOutcome:
    """Adjudicate one valid fault run from its acts and FLAGS lines."""
    after = [a for a in mapped if a.after_injection]
    permissive = [a for a in after if a.counts_permissive]
    narrow = [a for a in after if a.counts_narrow]
    in_force = narrow if rules.narrow_retry_reason else permissive
    flag_hits = [a for a in flagged if a.after_injection]
    headline_acts = in_force + (flag_hits if rules.union_headline else [])
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
    independent = detecting_seq is not None and any(
        a.corrective and a.seq >= detecting_seq for a in after
    )
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
        reacted_independent=independent,
        reacted=detected_hard if rules.reacted == "identity" else independent,
    )
