"""Reading a campaign file: YAML -> ``CampaignFile`` and its scenarios, loaded and checked.

Every error names the file, the field (``scenarios.1``, ``agents.0``) and what was
expected, before any trial runs. A scenario entry is a path relative to the campaign
file, a path relative to the working directory, or the name of a shipped scenario.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.loading import read_yaml, validate
from pytest_sabot.lab.campaign import (
    CampaignFile,
    Trial,
    agent_kind,
    plan,
    plan_digest,
    problems,
)
from pytest_sabot.lab.controllers import CONTROLLERS
from pytest_sabot.lab.scenario import Scenario
from pytest_sabot.lab.scenario_load import load_scenario, resolve_scenario, scenario_digest


@dataclass(frozen=True)
class LoadedCampaign:
    """A campaign file with each scenario entry loaded (``scenarios[i]`` is the entry
    ``file.scenarios[i]``: its path and the scenario)."""

    path: Path
    file: CampaignFile
    scenarios: tuple[tuple[Path, Scenario], ...]
    trials: tuple[Trial, ...]
    digest: str

    def scenario_of(self, trial: Trial) -> tuple[Path, Scenario]:
        return self.scenarios[self.file.scenarios.index(trial.scenario)]


def _scenario_path(campaign: Path, entry: str) -> Path:
    beside = campaign.parent / entry
    return beside if beside.is_file() else resolve_scenario(entry)


def load_campaign(path: str | Path) -> LoadedCampaign:
    """Read and check one campaign file and every scenario it names."""
    path = Path(path)
    file = validate(path, CampaignFile, read_yaml(path))
    for field, expected, got in problems(file):
        raise SabotDataError(path, field, expected, got)
    for i, spec in enumerate(file.agents):
        if agent_kind(spec) == "builtin" and spec not in CONTROLLERS:
            raise SabotDataError(path, f"agents.{i}", f"a built-in controller (one of "
                                 f"{sorted(CONTROLLERS)})", spec)
    loaded: list[tuple[Path, Scenario]] = []
    for i, entry in enumerate(file.scenarios):
        try:
            where = _scenario_path(path, entry)
        except SabotDataError as exc:
            raise SabotDataError(path, f"scenarios.{i}", exc.expected, entry) from None
        loaded.append((where, load_scenario(where)))
    names = [scenario.name for _, scenario in loaded]
    try:
        trials = plan(file, names)
    except ValueError as exc:
        raise SabotDataError(path, "scenarios", "scenarios whose names differ", str(exc)) \
            from None
    digest = plan_digest(file, [scenario_digest(s) for _, s in loaded])
    return LoadedCampaign(path=path, file=file, scenarios=tuple(loaded), trials=tuple(trials),
                          digest=digest)


def seeded(scenario: Scenario, seed: int) -> Scenario:
    """The scenario of one trial: its world seeded with the trial's seed."""
    data = scenario.model_dump(mode="json")
    return Scenario.model_validate({**data, "world": {**data["world"], "seed": seed}})


__all__ = ["LoadedCampaign", "load_campaign", "seeded"]
