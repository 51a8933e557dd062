"""``sabot validate [ROOT] [--scenario FILE]... [--campaign FILE]...``: load every
registered wave with its tasks, mappings and anchors, every fault-lab scenario file (the
shipped ones, those under ROOT/scenarios/, and each ``--scenario`` file or folder) and
every lab campaign file (those under ROOT/campaigns/ and each ``--campaign`` file or
folder, with the scenarios each names); report each error found (exit 2 when there is
one)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pytest_sabot.commands.failure import fail
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.exit_codes import EXIT_ERROR, EXIT_PASS
from pytest_sabot.core.registry import RegistryError

if TYPE_CHECKING:
    from pytest_sabot.lab.campaign_load import LoadedCampaign
    from pytest_sabot.lab.scenario import Scenario

T = TypeVar("T")

SCENARIOS_DIR = "scenarios"
"""A root's folder of its own lab scenario files (every *.yaml / *.yml under it)."""
CAMPAIGNS_DIR = "campaigns"
"""A root's folder of its lab campaign files (every *.yaml / *.yml under it)."""


def _yaml_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def _yaml_files(folders: Iterable[Path], given: Iterable[Path]) -> list[Path]:
    """The YAML files under each existing folder, then the given ones (a folder stands for
    the YAML files under it; a missing path stays, to be reported as an error of its own)."""
    found = [p for folder in folders if folder.is_dir() for p in _yaml_under(folder)]
    for path in given:
        found += _yaml_under(path) if path.is_dir() else [path]
    return list(dict.fromkeys(found))


def scenario_files(root: Path, given: Iterable[Path]) -> list[Path]:
    """The scenario files to check: shipped, under ROOT/scenarios/, then the given ones."""
    from pytest_sabot.lab.scenario_load import SCENARIO_DIR

    return _yaml_files((SCENARIO_DIR, root / SCENARIOS_DIR), given)


def campaign_files(root: Path, given: Iterable[Path]) -> list[Path]:
    """The campaign files to check: under ROOT/campaigns/, then the given ones."""
    return _yaml_files((root / CAMPAIGNS_DIR,), given)


def _existing(path: Path, option: str, noun: str) -> Path:
    if not path.is_file():
        raise SabotDataError(option, "path", f"an existing {noun} file or a folder of them",
                             str(path))
    return path


def _checked(name: str, load: Callable[[], T], summary: Callable[[T], str]) -> int:
    """Print ``<name>: ok (<summary>)`` or ``<name>: <error>``; 1 when it is an error."""
    try:
        loaded = load()
    except (SabotDataError, RegistryError) as exc:
        print(f"{name}: {exc}")
        return 1
    print(f"{name}: ok ({summary(loaded)})")
    return 0


def _adapter(name: str) -> str:
    """A registered adapter's declaration loads and its ``run`` names a callable (its
    pipeline module is imported when the framework is installed); what was checked."""
    from pytest_sabot.core.frameworks import adapter

    declared = adapter(name)
    problem = declared.missing()
    if problem is not None:
        return f"run {declared.run} not imported: {problem}"
    try:
        declared.load_run()
    except RegistryError:
        raise
    except Exception as exc:  # the pipeline's own module: whatever it raises is named
        raise RegistryError(
            f"framework adapter {name!r}: run {declared.run} could not be imported: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    return f"run {declared.run}"


def _scenario(path: Path) -> Scenario:
    from pytest_sabot.lab.scenario_load import load_scenario

    return load_scenario(_existing(path, "--scenario", "scenario"))


def _campaign(path: Path) -> LoadedCampaign:
    from pytest_sabot.lab.campaign_load import load_campaign

    return load_campaign(_existing(path, "--campaign", "campaign"))


def _faults(scenario: Scenario) -> str:
    faults = ", ".join(f"{f.id}:{f.fault}" for f in scenario.faults) or "none"
    return f"{scenario.name}; faults {faults}"


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
    from pytest_sabot.core.frameworks import framework_names

    root = standard_root(args.root)
    try:
        names = framework_names()
    except RegistryError as exc:  # two targets for one name: nothing can be loaded
        return fail("sabot validate", str(exc))
    errors = sum(
        _checked(f"wave {wave}", partial(load_standard, wave, root),
                 lambda std: f"{len(std.cells)} cells, rules {std.rules.version}")
        for wave in available_waves(root)
    )
    errors += sum(
        _checked(f"adapter {name}", partial(_adapter, name), str) for name in names
    )
    for path in scenario_files(root, getattr(args, "scenario", None) or []):
        errors += _checked(f"scenario {path}", partial(_scenario, path), _faults)
    for path in campaign_files(root, getattr(args, "campaign", None) or []):
        errors += _checked(f"campaign {path}", partial(_campaign, path),
                           lambda c: f"{c.file.name}; {len(c.trials)} trials")
    return EXIT_ERROR if errors else EXIT_PASS
