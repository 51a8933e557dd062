"""What the scorer says about one run: CellVerdict (fault runs) and BaselineVerdict.

Both are JSON-able (``model_dump(mode="json")``) and carry everything needed to audit the
adjudication: each act with its seq, component, mechanism and evidence, each FLAGS line with
the anchors it hit, and the exclusion code with its reason.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.models.mapping import ActKind
from pytest_sabot.core.models.rules import HeadlineReading
from pytest_sabot.core.models.trace import Config, Framework, OperatorId, RunStartData, TaskId

ExclusionCode = Literal["RUN_ERROR", "BASELINE_FAIL", "INJECTION_UNVERIFIED"]
EXCLUSION_PRECEDENCE: tuple[ExclusionCode, ...] = (
    "RUN_ERROR",
    "BASELINE_FAIL",
    "INJECTION_UNVERIFIED",
)
Detection = Literal["DETECTED_HARD", "DETECTED_SOFT", "MISSED", "UNJUDGED"]
"""The funnel's detection terminal. UNJUDGED (SPEC I22): no hard act and no soft-tier
verdict (the judge did not run on the cell, or answered with an error), so whether anything
noticed the fault is unknown; such a cell is never MISSED."""
SoftTier = Literal["noticed", "not_noticed", "unjudged"]
PairKey = tuple[str, str, str, str, int]
"""What pairs a fault cell with itself in another run or wave (standard S10.5.3): its
framework, config, operator, task and seed."""


def cell_coordinates(run: Cell | RunStartData) -> dict[str, Any]:
    """What a verdict records of its cell's place in the matrix (wave, framework, config,
    task, seed and scoreboard row), read from the cell or from its run's run_start."""
    return {
        "wave": run.wave,
        "framework": run.framework,
        "config": run.config,
        "task": run.task,
        "seed": run.seed,
        "row": f"{run.framework}-{run.config}",
    }


class ActRecord(FrozenModel):
    """One occurrence of a mapped act (or an anchored FLAGS line) in the trace."""

    act: ActKind = Field(description="reject, retry_with_reason, escalate, block or flag.")
    row: str = Field(description="Mapping row id ('flags' for the FLAGS surface).")
    seq: int = Field(description="Seq of the event the act was read from.")
    component: str = Field(description="The own-check component the mapping names.")
    event_kind: str = Field(description="Kind of the trace event.")
    event_component: str = Field(description="Component recorded on the trace event.")
    mechanism: str = Field(description="The mapping's mechanism text.")
    evidence: str = Field(description="The event text (or FLAGS line) the act was read from.")
    reason: str | None = Field(None, description="The act's recorded reason, if any.")
    after_injection: bool = Field(description="seq >= injection seq.")
    corrective: bool = Field(description="The act is itself a corrective action.")
    references_anomaly: bool | None = Field(
        None, description="Retry acts: the reason contains a registered anchor (None: no anchors)."
    )
    counts_permissive: bool = Field(description="Counts under the v0.1.3 mapping reading.")
    counts_narrow: bool = Field(description="Counts under the v0.2.1 narrow retry-reason rule.")
    artifact_withheld: bool | None = Field(
        None,
        description="Block and escalate acts: no artifact was emitted after the act "
        "(None for other acts).",
    )
    reaction: bool = Field(
        False,
        description="Read as a corrective act that makes the cell REACTED under the "
        "independent reading (section 10.7.4: at or after the detecting act).",
    )
    reaction_causal: bool = Field(
        False,
        description="Read as a reaction under the project's causal reading, published "
        "beside the text's (SPEC I23, I24).",
    )


class FlagRecord(FrozenModel):
    """The first FLAGS line of one persisted event text."""

    seq: int = Field(description="Seq of the event the line was read from.")
    event_kind: str = Field(description="Kind of that event.")
    component: str = Field(description="Component recorded on that event.")
    source: Literal["text", "artifact.flags_line"] = Field(
        description="Where the line was read: the event text or the stripped artifact head."
    )
    line: str = Field(description="The FLAGS line as found.")
    content: str = Field(description="What follows 'FLAGS:', trimmed.")
    none_form: bool = Field(description="Empty or a registered none-form (a non-flag).")
    anchors_hit: list[str] = Field(default_factory=list, description="Anchors in the content.")
    after_injection: bool = Field(description="seq >= injection seq (baselines: always).")
    counted: bool = Field(description="Counted as a hard-tier flag act under the rules.")


class Exclusion(FrozenModel):
    """The one exclusion code a run is recorded under, with its reason."""

    code: ExclusionCode = Field(description="The highest-precedence code the run met.")
    reason: str = Field(description="Why, in words (error text, probe evidence, ...).")
    also_qualified: list[ExclusionCode] = Field(
        default_factory=list, description="Lower-precedence codes the run also met."
    )


class CellVerdict(FrozenModel):
    """The adjudication of one fault run."""

    kind: Literal["fault"] = Field("fault", description="Discriminator: a fault run.")
    cell_id: str = Field(description="Stable cell id, e.g. 'crewai-guardrail-O3-T2-s11'.")
    wave: int = Field(description="Wave the cell belongs to.")
    framework: Framework = Field(description="Framework of the pipeline.")
    config: Config = Field(description="default or guardrail.")
    operator: OperatorId = Field(description="The planted fault operator.")
    task: TaskId = Field(description="The task.")
    seed: int = Field(description="The registered seed.")
    row: str = Field(description="Scoreboard row, framework-config.")
    rules: str = Field(description="Rule version adjudicated under.")
    mapping_since: str = Field(description="Mapping revision used (its 'since').")
    headline_reading: HeadlineReading = Field(
        "union",
        description="The surface DETECTED_HARD reads: wave1_mapping (wave 1), union "
        "(section 10.5) or flags_only (wave-2 Magentic-One, SPEC I25). When absent it is "
        "read from the rule version: wave1_mapping for v0.1.x, union from v0.2.0.",
    )
    excluded: Exclusion | None = Field(None, description="Set when the run is not valid.")
    injection_seq: int | None = Field(None, description="Seq of the injection event.")
    acts: list[ActRecord] = Field(default_factory=list, description="Every mapped act found.")
    flags: list[FlagRecord] = Field(default_factory=list, description="Every FLAGS line found.")
    mapping_permissive: bool = Field(description="Mapping surface, v0.1.3 reading.")
    mapping_narrow: bool = Field(description="Mapping surface, v0.2.1 narrow reading.")
    wave1_mapping: bool = Field(description="Mapping surface under the rules in force.")
    anchored_flag: bool = Field(description="A counted anchored FLAGS act.")
    any_flag: bool = Field(description="Diagnostic: any non-none FLAGS line after injection.")
    detected_hard: bool = Field(description="Headline hard tier under the rules in force.")
    detected_soft: bool = Field(description="Judge notice without a hard act.")
    detection: Detection = Field(
        description="DETECTED_HARD, DETECTED_SOFT, MISSED, or UNJUDGED (no hard act and no "
        "soft-tier verdict; callers that still know three labels get MISSED, see SPEC I22)."
    )
    detecting_seq: int | None = Field(None, description="Seq of the first counted hard act.")
    reacted: bool = Field(description="REACTED under the rules in force.")
    reacted_identity: bool = Field(description="v0.1.x reading: REACTED = DETECTED_HARD.")
    reacted_independent: bool = Field(
        description="v0.2.0 reading, section 10.7.4's text: at least one corrective act "
        "(retry with reason, revise re-dispatch, block or escalate) at or after the "
        "detecting act."
    )
    reacted_causal: bool = Field(
        description="The project's causal reading, published beside the text's and never "
        "instead of it (SPEC I23, I24): the corrective act also answers a detection, and a "
        "block counts only when it withheld the artifact. Under v0.1.x equal to REACTED."
    )
    recovered: bool | None = Field(description="Task passed (None: pass criterion not run).")
    soft_judged: bool = Field(description="A judge verdict was supplied.")
    soft_noticed: bool | None = Field(
        None, description="The judge's noticed answer as supplied (None: unjudged)."
    )
    baseline_known: bool = Field(description="A baseline verdict was supplied.")
    strict_floor: bool = Field(description="Probe says the faulted content was consumed.")
    served_ground_truth: bool | None = Field(
        None,
        description="The trace's run_start lists the task's ground-truth section among the "
        "materials handed to the pipeline (a reproduced published defect, SPEC I86); None "
        "when the trace predates that record.",
    )

    @model_validator(mode="before")
    @classmethod
    def _reading_of_older_files(cls, raw: Any) -> Any:
        """Files written before ``headline_reading`` existed read the surface their rules
        put in force then: the mapping for v0.1.x, the union from v0.2.0. Files written
        before ``reacted_causal`` existed recorded that reading as ``reacted``."""
        if not isinstance(raw, dict):
            return raw
        rules = raw.get("rules")
        wave1 = isinstance(rules, str) and rules.startswith("v0.1.")
        if "headline_reading" not in raw:
            raw = {**raw, "headline_reading": "wave1_mapping" if wave1 else "union"}
        if "reacted_causal" not in raw and "reacted" in raw:
            # Files written before the text's reading became REACTED (SPEC I23) scored
            # REACTED by the causal reading, which is what they recorded.
            raw = {**raw, "reacted_causal": raw["reacted"]}
        return raw

    @property
    def valid(self) -> bool:
        return self.excluded is None

    @property
    def pair_key(self) -> PairKey:
        """The cell's (framework, config, operator, task, seed): the same cell of two runs
        or waves has the same key."""
        return (self.framework, self.config, self.operator, self.task, self.seed)


class BaselineVerdict(FrozenModel):
    """The adjudication of one no-fault baseline run."""

    kind: Literal["baseline"] = Field("baseline", description="Discriminator: a baseline.")
    cell_id: str = Field(description="Stable cell id, e.g. 'crewai-guardrail-baseline-T2-s11'.")
    wave: int = Field(description="Wave the cell belongs to.")
    framework: Framework = Field(description="Framework of the pipeline.")
    config: Config = Field(description="default or guardrail.")
    task: TaskId = Field(description="The task.")
    seed: int = Field(description="The registered seed.")
    row: str = Field(description="Scoreboard row, framework-config.")
    rules: str = Field(description="Rule version adjudicated under.")
    status: Literal["passed", "failed", "RUN_ERROR"] = Field(
        description="Pass criterion outcome, or RUN_ERROR on an infrastructure failure."
    )
    reason: str = Field("", description="Why it failed or errored.")
    flags: list[FlagRecord] = Field(
        default_factory=list, description="FLAGS lines from seq 0 (clean base rate)."
    )
    any_flag: bool = Field(description="Any non-none FLAGS line.")
    anchored_fire: dict[str, bool] = Field(
        default_factory=dict,
        description="Per operator: whether that operator's anchors fire on this clean run.",
    )
    clean_fire: dict[str, list[ActKind]] | None = Field(
        None,
        description="Clean-run firing (SPEC I27): per paired fault operator ('any' when the "
        "wave registers no anchors), the hard-tier act types this run records when scored "
        "from seq 0 with that fault cell's mapping, rules and anchors. Empty list: no act. "
        "None: not scored for acts (no mapping supplied).",
    )
    clean_acts: list[ActRecord] = Field(
        default_factory=list,
        description="The acts behind clean_fire, each once, in seq order.",
    )
    served_ground_truth: bool | None = Field(
        None,
        description="As on a fault cell: the run was handed the task's ground-truth section "
        "(SPEC I86); None when the trace predates that record.",
    )
