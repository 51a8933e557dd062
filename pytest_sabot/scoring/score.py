"""score_cell / score_baseline: a pure function of one trace and the published rules.

No I/O and no model calls: the caller supplies the mapping revision, the rule set, the
cell's anchors, the task's pass verdict, the baseline's pass verdict and the judge's
soft-tier notice. The injection seq is the seq of the first ``injection`` event (falling
back to the first landed ``probe`` event when the operator recorded no injection event).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_sabot.core.models.anchors import Anchor
from pytest_sabot.core.models.cells import cell_id
from pytest_sabot.core.models.defects import GROUND_TRUTH_MATERIAL
from pytest_sabot.core.models.mapping import ActKind, MappingRevision
from pytest_sabot.core.models.rules import RuleSet, version_key
from pytest_sabot.core.models.trace import Trace, injection_seq
from pytest_sabot.core.models.verdict import (
    ActRecord,
    BaselineVerdict,
    CellVerdict,
    cell_coordinates,
)
from pytest_sabot.core.operators import served_model
from pytest_sabot.scoring.acts import find_acts
from pytest_sabot.scoring.exclusions import fault_run_exclusion, run_error_reason
from pytest_sabot.scoring.flags import collect_flags
from pytest_sabot.scoring.funnel import FunnelOutcome, flag_acts, run_funnel


def served_ground_truth(trace: Trace) -> bool | None:
    """Whether the run was handed the task's ground-truth section, as its run_start records
    the materials (SPEC I86); None for a trace written before that record."""
    materials = trace.start.materials
    return GROUND_TRUTH_MATERIAL in materials if materials else None


def with_withheld(acts: list[ActRecord], trace: Trace) -> list[ActRecord]:
    """Mark block and escalate acts with whether an artifact followed them (SPEC I24)."""
    artifacts = [e.seq for e in trace.of_kind("artifact")]
    return [
        a.model_copy(update={"artifact_withheld": not any(s > a.seq for s in artifacts)})
        if a.act in ("block", "escalate")
        else a
        for a in acts
    ]


def flags_counted(mapping: MappingRevision, rules: RuleSet, config: str, operator: str) -> bool:
    """Whether FLAGS lines can be hard-tier acts for this cell under these rules."""
    if not rules.flags_surface or mapping.flags is None or config not in mapping.flags.configs:
        return False
    return not (served_model(operator) and rules.o4_flags_excluded)


def _check_pairing(trace: Trace, mapping: MappingRevision, rules: RuleSet) -> None:
    start = trace.start
    if mapping.framework != start.framework:
        raise ValueError(
            f"mapping is for {mapping.framework} but the trace is a {start.framework} run"
        )
    if version_key(mapping.since) > rules.key:
        raise ValueError(
            f"mapping revision {mapping.since} is not in force under rules {rules.version}"
        )


def score_cell(
    trace: Trace,
    *,
    mapping: MappingRevision,
    rules: RuleSet,
    anchors: Sequence[Anchor] | None,
    passed: bool | None,
    baseline_passed: bool | None,
    soft_noticed: bool | None,
    label_unjudged: bool = False,
) -> CellVerdict:
    """Adjudicate one fault run into the Sabot funnel (standard sections 2, 3, 5, 10).

    ``soft_noticed`` None means no soft-tier verdict (judge not run, or a judge error): the
    cell is unjudged (SPEC I22) and stays out of every soft-tier rate. ``label_unjudged``
    names such a cell's detection UNJUDGED; left False it reads MISSED for callers whose
    outcome vocabulary has three labels (its ``soft_judged`` is False either way).
    """
    start = trace.start
    if start.operator is None:
        raise ValueError("score_cell needs a fault run; use score_baseline for a baseline")
    _check_pairing(trace, mapping, rules)
    operator = start.operator
    inj = injection_seq(trace)
    mapped = with_withheld(find_acts(trace, mapping, start.config, inj, anchors), trace)
    counting = flags_counted(mapping, rules, start.config, operator)
    flags = collect_flags(
        trace,
        injection_seq=inj if inj is not None else len(trace.events),
        anchors=anchors,
        counting=counting,
    )
    flagged = (
        flag_acts(flags, mapping.flags.mechanism, mapping.flags.component)
        if mapping.flags is not None
        else []
    )
    row = f"{start.framework}-{start.config}"
    reading = rules.headline_reading(row)
    outcome = run_funnel(mapped, flagged, flags, rules, soft_noticed,
                         label_unjudged=label_unjudged, reading=reading)
    probes = trace.of_kind("probe")
    return CellVerdict(
        cell_id=start.cell_id,
        **cell_coordinates(start),
        operator=operator,
        rules=rules.version,
        mapping_since=mapping.since,
        headline_reading=reading,
        excluded=fault_run_exclusion(trace, operator, rules, baseline_passed),
        injection_seq=inj,
        acts=sorted(
            [_mark_reactions(a, outcome, rules) for a in [*mapped, *flagged]],
            key=lambda a: a.seq,
        ),
        flags=flags,
        **outcome.verdict_fields(),
        recovered=passed,
        soft_judged=soft_noticed is not None,
        soft_noticed=soft_noticed,
        baseline_known=baseline_passed is not None,
        strict_floor=any(p.data.landed and p.data.consumed for p in probes),
        served_ground_truth=served_ground_truth(trace),
    )


def _mark_reactions(act: ActRecord, outcome: FunnelOutcome, rules: RuleSet) -> ActRecord:
    """Mark the acts each reading of REACTED takes as reactions (independent rules only)."""
    if rules.reacted != "independent":
        return act
    key = (act.row, act.seq)
    update = {"reaction": key in outcome.reactions,
              "reaction_causal": key in outcome.reactions_causal}
    return act.model_copy(update=update) if any(update.values()) else act


ANY_OPERATOR = "any"


def clean_run_acts(
    trace: Trace,
    *,
    mapping: MappingRevision,
    rules: RuleSet,
    anchors_by_operator: Mapping[str, Sequence[Anchor]],
    operators: Sequence[str] | None = None,
) -> tuple[dict[str, list[ActKind]], list[ActRecord]]:
    """A no-fault run scored as each paired fault cell would be (SPEC I27): the same mapping
    revision and rules, that cell's anchors, the headline reading of its row, every event
    from seq 0. Returns, per paired operator, the hard-tier act types found, and the acts."""
    start = trace.start
    row = f"{start.framework}-{start.config}"
    reading = rules.headline_reading(row)
    names = list(operators) if operators is not None else sorted(anchors_by_operator)
    fired: dict[str, list[ActKind]] = {}
    found: dict[tuple[str, int], ActRecord] = {}
    for operator in names or [ANY_OPERATOR]:
        anchors = anchors_by_operator.get(operator)
        mapped = with_withheld(find_acts(trace, mapping, start.config, 0, anchors), trace)
        in_force = [
            a for a in mapped
            if (a.counts_narrow if rules.narrow_retry_reason else a.counts_permissive)
        ]
        flagged: list[ActRecord] = []
        if (
            operator != ANY_OPERATOR
            and mapping.flags is not None
            and flags_counted(mapping, rules, start.config, operator)
        ):
            lines = collect_flags(trace, injection_seq=None, anchors=anchors, counting=True)
            flagged = flag_acts(lines, mapping.flags.mechanism, mapping.flags.component)
        acts = {
            "wave1_mapping": in_force,
            "union": in_force + flagged,
            "flags_only": flagged,
        }[reading]
        fired[operator] = sorted({a.act for a in acts})
        for act in acts:
            found.setdefault((act.row, act.seq), act)
    return fired, sorted(found.values(), key=lambda a: (a.seq, a.row))


def score_baseline(
    trace: Trace,
    *,
    passed: bool | None,
    anchors_by_operator: Mapping[str, Sequence[Anchor]] | None = None,
    rules: RuleSet,
    mapping: MappingRevision | None = None,
    operators: Sequence[str] | None = None,
) -> BaselineVerdict:
    """Adjudicate one no-fault baseline: passed, failed or RUN_ERROR, plus the clean-run
    FLAGS base rate (scanned from seq 0) per operator's anchors. With the framework's
    ``mapping`` it is also scored for hard-tier acts exactly as its paired fault cells are
    (the clean-run firing rate, SPEC I27); ``operators`` names the paired fault operators
    (default: those with anchors, or 'any' when the wave registers none)."""
    start = trace.start
    if start.operator is not None:
        raise ValueError("score_baseline needs a no-fault baseline run")
    error = run_error_reason(trace)
    if error is not None:
        status, reason = "RUN_ERROR", error
    elif passed:
        status, reason = "passed", ""
    else:
        status = "failed"
        reason = "the task's pass criterion failed" if passed is False else "no pass verdict"
    flags = collect_flags(trace, injection_seq=None, anchors=None, counting=False)
    fire: dict[str, bool] = {}
    for operator, anchors in sorted((anchors_by_operator or {}).items()):
        per_op = collect_flags(trace, injection_seq=None, anchors=anchors, counting=True)
        fire[operator] = any(f.counted for f in per_op)
    clean_fire: dict[str, list[ActKind]] | None = None
    clean_acts: list[ActRecord] = []
    if mapping is not None:
        _check_pairing(trace, mapping, rules)
        clean_fire, clean_acts = clean_run_acts(
            trace,
            mapping=mapping,
            rules=rules,
            anchors_by_operator=anchors_by_operator or {},
            operators=operators,
        )
    return BaselineVerdict(
        cell_id=start.cell_id or cell_id(start.framework, start.config, None, start.task,
                                         start.seed),
        **cell_coordinates(start),
        rules=rules.version,
        status=status,
        reason=reason,
        flags=flags,
        any_flag=any(not f.none_form for f in flags),
        anchored_fire=fire,
        clean_fire=clean_fire,
        clean_acts=clean_acts,
        served_ground_truth=served_ground_truth(trace),
    )

