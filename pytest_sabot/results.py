"""results.json: the versioned record of a scored wave, and how it is built from a run
directory. Every number in RESULTS.md and the terminal summary is read from this file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_sabot import __version__
from pytest_sabot.adjudicate import missing, score_recorded
from pytest_sabot.harness.run import installed_versions
from pytest_sabot.models.verdict import BaselineVerdict, CellVerdict
from pytest_sabot.pins import off_pin
from pytest_sabot.scoring import Scoreboard, scoreboard
from pytest_sabot.standard import Standard
from pytest_sabot.trace_io import write_json_atomic

RESULTS_SCHEMA_VERSION = "1"
RESULTS_FILE = "results.json"
FIXTURE_LABEL = "keyless: fixtures of the embedded model ({model}), not a measurement of any LLM"


DEFAULT_UPSTREAM = "https://api.openai.com/v1"


def model_label(model: str, upstream: str | None = None) -> str:
    """How results of a model are labelled wherever they are shown. A live model reached
    through another OpenAI-compatible server is named with that server: its numbers
    measure what that server answered, not the provider's model of the same name."""
    if model.startswith("sim"):
        return FIXTURE_LABEL.format(model=model)
    if model.startswith("replay:"):
        return (f"replay of recorded exchanges ({model}): no model was called; the numbers "
                "are those of the recorded run, labelled as that run was")
    if upstream and upstream.rstrip("/") != DEFAULT_UPSTREAM:
        return f"live model {model} as served by {upstream} (not the provider's own endpoint)"
    return f"live model {model}"


class Selection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    registered: int = Field(description="Cells in the wave's registry (carve-outs included).")
    selected: int = Field(description="Runnable cells this session selected.")
    recorded: int = Field(description="Selected cells with a complete record.")
    missing: list[str] = Field(default_factory=list, description="Selected, not recorded.")


class ResultsFile(BaseModel):
    """Everything a scored wave published: cells with their acts and evidence, rows, and
    what it ran on."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = Field(RESULTS_SCHEMA_VERSION, description="Format version.")
    tool: str = Field(description="pytest-sabot version that wrote the file.")
    wave: int
    rules: str = Field(description="Rule version the verdicts are adjudicated under.")
    wave_rules: str = Field(description="Rule version the wave is registered under.")
    model: str = Field(description="Pipeline model spec, e.g. 'sim:realistic'.")
    fixture: bool = Field(description="True when the embedded model served (keyless).")
    label: str = Field(description="How these numbers must be described.")
    registration_hash: str = Field(description="sha256 of the cells/tasks/mappings used.")
    versions: dict[str, str] = Field(description="Installed framework versions.")
    off_pin: dict[str, str] = Field(description="Packages not at the standard's pins.")
    selection: Selection
    scoreboard: Scoreboard
    cells: list[Annotated[CellVerdict | BaselineVerdict, Field(discriminator="kind")]]
    structural_zeros: list[str] = Field(description="Registered carve-out cells, never run.")
    judge: dict[str, Any] | None = Field(None, description="Soft-tier judge summary.")
    spend: dict[str, Any] | None = Field(None, description="Gateway spend and call counts.")


def build_results(
    std: Standard,
    out_dir: Path,
    *,
    selected_ids: list[str] | None = None,
    model: str,
    upstream: str | None = None,
    judge: dict[str, Any] | None = None,
    spend: dict[str, Any] | None = None,
) -> ResultsFile:
    """Score every recorded cell of the selection and assemble results.json."""
    chosen = (
        std.cells if selected_ids is None else [c for c in std.cells if c.id in set(selected_ids)]
    )
    runnable = [c for c in chosen if not c.carved_out]
    verdicts = score_recorded(std, out_dir, runnable)
    carved = [c for c in chosen if c.carved_out]
    versions = installed_versions()
    return ResultsFile(
        tool=f"pytest-sabot {__version__}",
        wave=std.wave.wave,
        rules=std.rules.version,
        wave_rules=std.wave.rules,
        model=model,
        fixture=model.startswith("sim"),
        label=model_label(model, upstream),
        registration_hash=std.registration_hash(),
        versions=versions,
        off_pin=off_pin(versions),
        selection=Selection(
            registered=len(std.cells),
            selected=len(runnable),
            recorded=len(verdicts),
            missing=missing(out_dir, runnable),
        ),
        scoreboard=scoreboard(verdicts, carve_outs=carved),
        cells=verdicts,
        structural_zeros=[c.id for c in carved],
        judge=judge,
        spend=spend,
    )


def write_results(results: ResultsFile, out_dir: Path) -> Path:
    path = out_dir / RESULTS_FILE
    write_json_atomic(path, results.model_dump(mode="json"))
    return path


def read_results(path: Path) -> ResultsFile:
    if path.is_dir():
        path = path / RESULTS_FILE
    return ResultsFile.model_validate_json(path.read_text(encoding="utf-8"))
