"""Wave files (cells/waveN.yaml) and the cell matrix they expand into."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import Field, model_validator

from pytest_sabot.core.frameworks import STANDARD_FRAMEWORKS
from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.core.models.trace import Config, OperatorId, RegisteredFramework, TaskId
from pytest_sabot.core.operators import declaration, lab_operator_ids, standard_operator_ids

FRAMEWORKS: tuple[str, ...] = STANDARD_FRAMEWORKS
"""The standard's frameworks (section 8), the default of every wave. Any other registered
framework has a candidate row: it runs only in a candidate matrix, never in a wave of the
standard."""
NAMED_WAVE_FROM = 100
"""A named matrix (cells/<name>.yaml) carries a number of at least this, so a number never
means both a wave of the standard and a named matrix."""
CONFIGS: tuple[Config, ...] = ("default", "guardrail")
OPERATORS: tuple[str, ...] = standard_operator_ids()
"""The standard's operators (section 4), the default of every wave (core/operators.py)."""
TASKS: tuple[TaskId, ...] = ("T1", "T2", "T3", "T4", "T5")
LAB_OPERATORS: tuple[str, ...] = lab_operator_ids()
"""The fault lab's operators (docs/LAB.md): they run only in a lab matrix."""
LAB_TASKS: tuple[TaskId, ...] = ("T6",)
"""The fault lab's tasks: they run only in a lab matrix."""
RULE_VERSIONS = ("v0.1.1", "v0.1.2", "v0.1.3", "v0.2.0", "v0.2.1")


class CarveOut(FrozenModel):
    """Cells registered as structural zeros: counted in the registry, never run."""

    framework: RegisteredFramework
    config: Config
    operators: list[OperatorId]
    reason: str = Field(description="Why these cells cannot execute with the fault in view.")


class WaveSpec(FrozenModel):
    """One wave of the experiment: which matrix runs, under which rules and protocol."""

    wave: int = Field(ge=1)
    name: str | None = Field(
        None,
        pattern=r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$",
        description=(
            "The name of a named matrix, e.g. 'agent-framework' (file cells/<name>.yaml, "
            "selected with --sabot-wave=<name>); none for a numbered wave (cells/waveN.yaml)."
        ),
    )
    candidate: bool = Field(
        False,
        description=(
            "A candidate matrix: registered and scored like a wave, but not part of the "
            "standard's waves (it may run candidate frameworks such as agent_framework)."
        ),
    )
    title: str
    rules: str = Field(
        pattern=r"^v\d+\.\d+\.\d+$",
        description=(
            "Rule version every cell of this wave is scored under; must be listed in "
            "mappings/rules.yaml (v0.1.1 .. v0.2.1 ship with the standard)."
        ),
    )
    flags_protocol: bool = Field(description="Whether the FLAGS addendum (section 10) is on.")
    contract_revision: str = Field(
        description="Which published output-contract revision the tasks use ('v0.1' or 'v0.2')."
    )
    redacted_materials: bool = Field(
        True, description="The pipeline sees only each task's public view (always true here)."
    )
    anchors: str | None = Field(
        None, description="Anchor registry file under cells/ (None when flags are off)."
    )
    seeds_file: str = Field(description="Seed registry under cells/seeds/, e.g. 'wave1.json'.")
    frameworks: list[RegisteredFramework] = Field(default_factory=lambda: list(FRAMEWORKS))
    configs: list[Config] = Field(default_factory=lambda: list(CONFIGS))
    operators: list[OperatorId] = Field(default_factory=lambda: list(OPERATORS))
    tasks: list[TaskId] = Field(default_factory=lambda: list(TASKS))
    pipeline_model: str = Field("gpt-5.6-terra", description="Live pipeline model (section 8).")
    downgrade_model: str = Field("gpt-5.6-luna", description="Live O4 target (section 8).")
    carve_outs: list[CarveOut] = Field(default_factory=list)
    lab: bool = Field(
        False,
        description=(
            "A lab matrix (docs/LAB.md): its tasks are the fault lab's (T6) and its operators "
            "the lab's (O7 and above); each cell records the lab gate beside the Sabot funnel. "
            "Never a wave of the standard."
        ),
    )
    hang_bound_s: float | None = Field(
        None,
        gt=0,
        description=(
            "How long, in seconds, a pipeline may wait on a tool call its fault holds "
            "unanswered (a hung tool, O12) before the harness stops the run at the cell's "
            "deadline (SPEC I131). Required when the matrix runs an operator that holds calls."
        ),
    )

    @model_validator(mode="after")
    def _lab_apart(self) -> WaveSpec:
        if self.lab and self.name is None:
            raise ValueError("a lab matrix needs a name")
        for field, values, own in (("operators", self.operators, LAB_OPERATORS),
                                   ("tasks", self.tasks, LAB_TASKS)):
            if self.lab:
                other = [v for v in values if v not in own]
                if other:
                    raise ValueError(f"a lab matrix lists only the lab's {field} "
                                     f"({', '.join(own)}), not {other[0]}")
            else:
                lab_only = [v for v in values if v in own]
                if lab_only:
                    raise ValueError(f"{lab_only[0]} belongs to the fault lab: it runs only in "
                                     "a matrix marked 'lab: true'")
        return self

    @model_validator(mode="after")
    def _holds_need_a_bound(self) -> WaveSpec:
        holding = [op for op in self.operators if declaration(op).holds_calls]
        if holding and self.hang_bound_s is None:
            raise ValueError(f"{holding[0]} holds tool calls unanswered: the matrix declares "
                             "hang_bound_s (how long a pipeline may wait on one)")
        return self

    @model_validator(mode="after")
    def _flags_need_anchors(self) -> WaveSpec:
        if self.flags_protocol and not self.anchors:
            raise ValueError("a wave with flags_protocol on must name its anchors registry")
        return self

    @model_validator(mode="after")
    def _candidates_apart(self) -> WaveSpec:
        if self.candidate and self.name is None:
            raise ValueError("a candidate matrix needs a name")
        listed = [fw for fw in self.frameworks if fw not in FRAMEWORKS]
        if listed and not self.candidate:
            raise ValueError(
                f"{listed[0]} has a candidate row only: it runs in a matrix marked "
                "'candidate: true', never in a wave of the standard"
            )
        return self

    @property
    def label(self) -> str:
        """How the wave is named to people: its name, else 'wave N'."""
        return self.name if self.name is not None else f"wave {self.wave}"


class SeedRegistry(FrozenModel):
    """Seeds registered for a wave before any run; never changed afterwards."""

    wave: int
    registered: str = Field(description="ISO date the seeds were registered.")
    seeds: list[int] = Field(min_length=1, description="The registered seeds, in run order.")
    note: str = Field("", description="Why these seeds (e.g. reused on purpose for pairing).")


class Cell(FrozenModel):
    """One (framework, config, operator-or-baseline, task, seed) combination."""

    wave: int
    framework: RegisteredFramework
    config: Config
    operator: OperatorId | None = Field(description="None for the no-fault baseline.")
    task: TaskId
    seed: int
    carved_out: bool = False

    @property
    def is_baseline(self) -> bool:
        return self.operator is None

    @property
    def id(self) -> str:
        return cell_id(self.framework, self.config, self.operator, self.task, self.seed)

    @property
    def baseline_id(self) -> str:
        """Id of the baseline this cell's validity depends on (itself for a baseline)."""
        return cell_id(self.framework, self.config, None, self.task, self.seed)

    @property
    def row(self) -> str:
        """Scoreboard row: framework x config."""
        return f"{self.framework}-{self.config}"


def cell_id(
    framework: str, config: str, operator: str | None, task: str, seed: int
) -> str:
    return f"{framework}-{config}-{operator or 'baseline'}-{task}-s{seed}"


# What :func:`cell_id` writes, read back (a framework's name may hold hyphens).
_CELL_ID = re.compile(
    r"^(?P<framework>.+)-(?P<config>default|guardrail)-(?P<operator>O\d+|baseline)"
    r"-(?P<task>T\d+)-s(?P<seed>\d+)$"
)


@dataclass(frozen=True)
class CellCoordinates:
    """A cell's place in the matrix as its id spells it (``operator`` None: a baseline)."""

    id: str
    framework: str
    config: str
    operator: str | None
    task: str
    seed: int

    @property
    def row(self) -> str:
        return f"{self.framework}-{self.config}"


def parse_cell_id(text: str) -> CellCoordinates | None:
    """The coordinates a cell id spells; None for a text that is not one."""
    found = _CELL_ID.match(text)
    if found is None:
        return None
    operator = found["operator"]
    return CellCoordinates(
        id=text, framework=found["framework"], config=found["config"],
        operator=None if operator == "baseline" else operator, task=found["task"],
        seed=int(found["seed"]),
    )


def expand(spec: WaveSpec, seeds: list[int]) -> list[Cell]:
    """The wave's whole registry in a deterministic order: every baseline first, then every
    fault cell (carved-out cells included, flagged ``carved_out``)."""
    carved = {
        (c.framework, c.config, op) for c in spec.carve_outs for op in c.operators
    }
    baselines: list[Cell] = []
    faults: list[Cell] = []
    for fw in spec.frameworks:
        for cfg in spec.configs:
            for task in spec.tasks:
                for seed in seeds:
                    baselines.append(Cell(wave=spec.wave, framework=fw, config=cfg,
                                          operator=None, task=task, seed=seed))
            for op in spec.operators:
                for task in spec.tasks:
                    for seed in seeds:
                        faults.append(Cell(wave=spec.wave, framework=fw, config=cfg,
                                           operator=op, task=task, seed=seed,
                                           carved_out=(fw, cfg, op) in carved))
    return baselines + faults
