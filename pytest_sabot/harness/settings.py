"""How cells run (:class:`RunSettings`) and what every record of a cell says it was made
under: the run's identity (the trace's ``run_start``) and its provenance (``outcome.json``).
The run of a cell and the record of a crashed one write them alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_sabot.core.frameworks import installed_versions
from pytest_sabot.core.limits import DEFAULT_MAX_MODEL_CALLS
from pytest_sabot.core.model_spec import ModelSpec, parse_model
from pytest_sabot.core.models.cells import Cell, WaveSpec
from pytest_sabot.core.operators import served_model
from pytest_sabot.tasks.loader import PublicView

__all__ = ["RunSettings", "frameworks_model_name", "provenance", "run_start_data"]


@dataclass(frozen=True)
class RunSettings:
    """How cells run: the standard's root, where output goes, which model serves."""

    root: Path
    out_dir: Path
    gateway_url: str
    model: ModelSpec = field(default_factory=lambda: parse_model("sim:realistic"))
    """The pipeline model (its text is accepted too, and parsed here once)."""
    timeout_s: float = 300.0
    max_model_calls: int | None = DEFAULT_MAX_MODEL_CALLS  # the runaway guard; None: none
    downgrade_model: str | None = None
    attempts: int = 2
    session: str = ""  # run id of the session; every record carries it
    registration_hash: str = ""  # of the standard the cells come from (records carry it)
    rules: str = ""  # rule version of the session (records carry it)

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", parse_model(self.model))


def frameworks_model_name(settings: RunSettings, wave: WaveSpec) -> str:
    """The model name frameworks send: the standard's pipeline model under sim, the chosen
    upstream model when live."""
    if settings.model.is_live:
        return settings.model.name
    return wave.pipeline_model


def provenance(cell: Cell, wave: WaveSpec, settings: RunSettings) -> dict[str, Any]:
    """What a record is made under: a baseline is reused only under the same values."""
    return {
        "session": settings.session,
        "model": settings.model.given,
        "downgrade_model": (
            settings.downgrade_model or wave.downgrade_model if served_model(cell.operator)
            else None
        ),
        "registration_hash": settings.registration_hash,
        "rules": settings.rules,
    }


def run_start_data(
    cell: Cell, wave: WaveSpec, settings: RunSettings, view: PublicView, attempt: int
) -> dict[str, Any]:
    """The payload of an attempt's ``run_start`` event (docs/TRACE.md)."""
    return {
        "cell_id": cell.id,
        "wave": wave.wave,
        "framework": cell.framework,
        "config": cell.config,
        "operator": cell.operator,
        "task": cell.task,
        "seed": cell.seed,
        "rules": wave.rules,
        "model": settings.model.given,
        "flags_protocol": wave.flags_protocol,
        "materials": [m.name for m in view.materials],
        "versions": installed_versions(),
        "attempt": attempt,
    }
