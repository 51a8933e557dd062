"""``sabot validate [ROOT] [--scenario FILE]... [--campaign FILE]...``: load every
registered wave with its tasks, mappings and anchors, every fault-lab scenario file (the
shipped ones, those under ROOT/scenarios/, and each ``--scenario`` file or folder) and
every lab campaign file (those under ROOT/campaigns/ and each ``--campaign`` file or
folder, with the scenarios each names); report each error found (exit 2 when there is
one)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

from pytest_sabot.commands.failure import fail
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.exit_codes import EXIT_ERROR, EXIT_PASS

SCENARIOS_DIR = "scenarios"
"""A root's folder of its own lab scenario files (every *.yaml / *.yml under it)."""
CAMPAIGNS_DIR = "campaigns"
"""A root's folder of its lab campaign files (every *.yaml / *.yml under it)."""


def _yaml_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def scenario_files(root: Path, given: Iterable[Path]) -> list[Path]:
    """The scenario files to check: shipped, under ROOT/scenarios/, then the given ones (a
    folder stands for the YAML files under it; a missing path is an error of its own)."""
    from pytest_sabot.lab.scenario_load import SCENARIO_DIR

    found = _yaml_under(SCENARIO_DIR)
    if (root / SCENARIOS_DIR).is_dir():
        found += _yaml_under(root / SCENARIOS_DIR)
    for path in given:
        found += _yaml_under(path) if path.is_dir() else [path]
    return list(dict.fromkeys(found))


def _check_scenarios(files: list[Path]) -> int:
    from pytest_sabot.lab.scenario_load import load_scenario

    errors = 0
    for path in files:
        try:
            if not path.is_file():
                raise SabotDataError("--scenario", "path", "an existing scenario file or a "
                                     "folder of them", str(path))
            scenario = load_scenario(path)
        except SabotDataError as exc:
            errors += 1
            print(f"scenario {path}: {exc}")
            continue
        faults = ", ".join(f"{f.id}:{f.fault}" for f in scenario.faults) or "none"
        print(f"scenario {path}: ok ({scenario.name}; faults {faults})")
    return errors


def campaign_files(root: Path, given: Iterable[Path]) -> list[Path]:
    """The campaign files to check: under ROOT/campaigns/, then the given ones."""
    found = _yaml_under(root / CAMPAIGNS_DIR) if (root / CAMPAIGNS_DIR).is_dir() else []
    for path in given:
        found += _yaml_under(path) if path.is_dir() else [path]
    return list(dict.fromkeys(found))


def _check_campaigns(files: list[Path]) -> int:
    from pytest_sabot.lab.campaign_load import load_campaign

    errors = 0
    for path in files:
        try:
            if not path.is_file():
                raise SabotDataError("--campaign", "path", "an existing campaign file or a "
                                     "folder of them", str(path))
            loaded = load_campaign(path)
        except SabotDataError as exc:
            errors += 1
            print(f"campaign {path}: {exc}")
            continue
        print(f"campaign {path}: ok ({loaded.file.name}; {len(loaded.trials)} trials)")
    return errors


def cmd_validate(args: argparse.Namespace) -> int:
    """Load every wave with its tasks, mappings and anchors, and every scenario file;
    report each error found."""
    from pytest_sabot.core.frameworks import register_targets
    from pytest_sabot.core.paths import standard_root
    from pytest_sabot.matrix.cells import available_waves
    from pytest_sabot.matrix.standard import load_standard

    problem = register_targets(getattr(args, "sabot_adapter", None))
    if problem is not None:  # a matrix naming the adapter's framework needs it to load
        return fail("sabot validate", problem)
    root = standard_root(args.root)
    errors = 0
    for wave in available_waves(root):
        try:
            std = load_standard(wave, root)
        except SabotDataError as exc:
            errors += 1
            print(f"wave {wave}: {exc}")
            continue
        print(f"wave {wave}: ok ({len(std.cells)} cells, rules {std.rules.version})")
    errors += _check_scenarios(scenario_files(root, getattr(args, "scenario", None) or []))
    errors += _check_campaigns(campaign_files(root, getattr(args, "campaign", None) or []))
    return EXIT_ERROR if errors else EXIT_PASS
