"""Loading a wave: cells/waveN.yaml + its seed registry -> the expanded cell matrix.

Every problem with the data is raised as a SabotDataError naming the file, the field and
what was expected, before anything runs (SPEC.md S8.1, S8.4, S10.6).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.frameworks import framework_names
from pytest_sabot.core.loading import parse_json, read_yaml_mapping, validate
from pytest_sabot.core.models.anchors import AnchorRegistry
from pytest_sabot.core.models.cells import (
    CONFIGS,
    LAB_TASKS,
    NAMED_WAVE_FROM,
    TASKS,
    Cell,
    SeedRegistry,
    WaveSpec,
    expand,
)
from pytest_sabot.core.operators import operator_ids

__all__ = [
    "CELLS_DIR",
    "SEEDS_DIR",
    "available_waves",
    "lab_files",
    "load_seed_registry",
    "load_wave",
    "load_wave_anchors",
    "load_wave_spec",
    "named_waves",
    "other_lab_files",
    "parse_wave_number",
    "runnable",
    "select_cells",
    "unrun_operator_specs",
    "wave_path",
]

CELLS_DIR = "cells"
SEEDS_DIR = "seeds"
CONTRACT_REVISIONS = ("v0.1", "v0.2")

_WAVE_FILE = re.compile(r"^wave(\d+)\.yaml$")
_WAVE_ARG = re.compile(r"^(?:wave[-_]?)?(\d+)$", re.IGNORECASE)
_NAMED_FILE = re.compile(r"^([a-z][a-z0-9]*(?:-[a-z0-9]+)*)\.yaml$")

# --------------------------------------------------------------------------- waves


def _cells_dir(root: Path) -> Path:
    return Path(root) / CELLS_DIR


def _numbered_waves(root: Path) -> list[int]:
    found: list[int] = []
    directory = _cells_dir(root)
    if directory.is_dir():
        for child in directory.iterdir():
            match = _WAVE_FILE.match(child.name)
            if match:
                found.append(int(match.group(1)))
    return sorted(found)


def named_waves(root: Path) -> dict[str, tuple[int, Path]]:
    """Named matrices under ``root``: name -> (wave number, file).

    A named matrix is a ``cells/<name>.yaml`` whose top level carries ``name: <name>`` (a
    candidate row's registered matrix, for instance). Two of them may not share a number.
    """
    found: dict[str, tuple[int, Path]] = {}
    directory = _cells_dir(root)
    if not directory.is_dir():
        return found
    by_number: dict[int, Path] = {}
    for child in sorted(directory.iterdir()):
        match = _NAMED_FILE.match(child.name)
        if match is None or _WAVE_FILE.match(child.name) or not child.is_file():
            continue
        raw = read_yaml_mapping(child)
        if "name" not in raw:
            continue  # another registry (anchors, ...)
        if _WAVE_ARG.match(match.group(1)):
            raise SabotDataError(child, "name", "a name that does not read as a wave number",
                                 raw["name"])
        if raw["name"] != match.group(1):
            raise SabotDataError(child, "name", f"{match.group(1)!r} (the file's name)",
                                 raw["name"])
        number = raw.get("wave")
        if not isinstance(number, int) or isinstance(number, bool):
            raise SabotDataError(child, "wave", "a wave number (an integer)", number)
        if number in by_number:
            raise SabotDataError(child, "wave", f"a number no other matrix has "
                                 f"({by_number[number].name} has {number})", number)
        by_number[number] = child
        found[match.group(1)] = (number, child)
    return found


def _lab_matrices(root: Path) -> list[tuple[int, list[Path]]]:
    """Each matrix marked ``lab: true``: its number, and its file with its seed registry."""
    found: list[tuple[int, list[Path]]] = []
    for number, path in named_waves(root).values():
        raw = read_yaml_mapping(path)
        if raw.get("lab") is True:
            own = [path]
            if isinstance(raw.get("seeds_file"), str):
                own.append(path.parent / SEEDS_DIR / raw["seeds_file"])
            found.append((number, own))
    return found


def lab_files(root: Path) -> list[Path]:
    """The files and folders registered with lab matrices only: each matrix marked
    ``lab: true`` with its seed registry, and the lab tasks' folders."""
    found = [path for _, own in _lab_matrices(root) for path in own]
    found += [Path(root) / "tasks" / task for task in LAB_TASKS]
    return found


def other_lab_files(root: Path, wave: int) -> list[Path]:
    """The files registered with another lab matrix alone (its file and seed registry, and
    none that this one registers too)."""
    matrices = _lab_matrices(root)
    mine = {path for number, own in matrices if number == wave for path in own}
    return [path for number, own in matrices if number != wave for path in own
            if path not in mine]


def unrun_operator_specs(root: Path, operators: Iterable[str]) -> list[Path]:
    """The task spec files of operators a matrix does not run: an operator declared after
    a task's operators.yaml was registered keeps its spec in ``operators-<id>.yaml``, which
    belongs to the matrices that run it alone."""
    run = set(operators)
    found: list[Path] = []
    for task in sorted((Path(root) / "tasks").glob("T*")):
        for path in sorted((task / "private").glob("operators-*.yaml")):
            if path.stem.removeprefix("operators-") not in run:
                found.append(path)
    return found


def available_waves(root: Path) -> list[int | str]:
    """Registered waves under ``root``: the numbers of the cells/waveN.yaml files, ascending,
    then the names of the named matrices (cells/<name>.yaml), in name order."""
    return [*_numbered_waves(root), *sorted(named_waves(root))]


def parse_wave_number(wave: int | str, root: Path) -> int:
    """Accept 2, '2', 'wave2', 'wave-2' or a named matrix's name; anything else is a clear
    error."""
    number: int | None
    if isinstance(wave, bool):
        number = None
    elif isinstance(wave, int):
        number = wave
    else:
        match = _WAVE_ARG.match(wave.strip())
        if match:
            number = int(match.group(1))
        else:
            named = named_waves(root).get(wave.strip())
            number = named[0] if named is not None else None
    if number is None or number < 1:
        names = ", ".join(sorted(named_waves(root)))
        expected = "a wave number such as 1, '2' or 'wave3'"
        expected += f", or the name of a registered matrix ({names})" if names else ""
        raise SabotDataError(_cells_dir(root), "wave", expected, wave)
    return number


def wave_path(wave: int | str, root: Path) -> Path:
    """Path of the wave's YAML; an unknown wave names the waves that exist."""
    number = parse_wave_number(wave, root)
    path = _cells_dir(root) / f"wave{number}.yaml"
    if path.is_file():
        return path
    for named_number, named_path in named_waves(root).values():
        if named_number == number:
            return named_path
    known = ", ".join(str(w) for w in available_waves(root)) or "none"
    raise SabotDataError(
        _cells_dir(root), "wave", f"a registered wave (known waves: {known})", wave
    )


def _check_unique(path: Path, field: str, values: Sequence[object]) -> None:
    seen: set[object] = set()
    for index, value in enumerate(values):
        if value in seen:
            raise SabotDataError(path, f"{field}.{index}", "each value listed once", value)
        seen.add(value)


def _check_consistency(path: Path, expected_wave: int, spec: WaveSpec) -> None:
    numbered = _WAVE_FILE.match(path.name) is not None
    if spec.wave != expected_wave:
        where = "the number in the file name" if numbered else "the number asked for"
        raise SabotDataError(path, "wave", f"{expected_wave} ({where})", spec.wave)
    if numbered and spec.name is not None:
        raise SabotDataError(path, "name", "no name in a numbered wave file (a named matrix "
                             "lives in cells/<name>.yaml)", spec.name)
    if not numbered and spec.name != path.stem:
        raise SabotDataError(path, "name", f"{path.stem!r} (the file's name)", spec.name)
    if not numbered and spec.wave < NAMED_WAVE_FROM:
        raise SabotDataError(path, "wave", f"a wave number of {NAMED_WAVE_FROM} or more (a named "
                             "matrix stays clear of the standard's wave numbers)", spec.wave)
    if spec.contract_revision not in CONTRACT_REVISIONS:
        raise SabotDataError(path, "contract_revision",
                             f"one of {', '.join(CONTRACT_REVISIONS)}", spec.contract_revision)
    rules_file = path.parent.parent / "mappings" / "rules.yaml"
    if not rules_file.is_file():  # a root with only cells/: the shipped rule book applies
        from pytest_sabot.core.paths import standard_root

        rules_file = standard_root() / "mappings" / "rules.yaml"
    if rules_file.is_file():
        from pytest_sabot.core.models.rules import load_rule_book

        known = load_rule_book(rules_file).names()
        if spec.rules not in known:
            allowed = ", ".join(f"'{v}'" for v in known)
            raise SabotDataError(path, "rules", f"one of the rule versions in {rules_file}: "
                                 f"{allowed}", spec.rules)
    if spec.rules.startswith("v0.1") and spec.flags_protocol:
        raise SabotDataError(path, "flags_protocol",
                             "false under v0.1.x rules (the FLAGS act arrives with v0.2.0)", True)
    for field, values in (("frameworks", spec.frameworks), ("configs", spec.configs),
                          ("operators", spec.operators), ("tasks", spec.tasks)):
        if not values:
            raise SabotDataError(path, field, "at least one value", values)
        _check_unique(path, field, values)
    for index, carve in enumerate(spec.carve_outs):
        where = f"carve_outs.{index}"
        if carve.framework not in spec.frameworks:
            raise SabotDataError(path, f"{where}.framework",
                                 f"one of the wave's frameworks {spec.frameworks}",
                                 carve.framework)
        if carve.config not in spec.configs:
            raise SabotDataError(path, f"{where}.config",
                                 f"one of the wave's configs {spec.configs}", carve.config)
        if not carve.operators:
            raise SabotDataError(path, f"{where}.operators", "at least one operator", [])
        _check_unique(path, f"{where}.operators", carve.operators)
        for op_index, op in enumerate(carve.operators):
            if op not in spec.operators:
                raise SabotDataError(path, f"{where}.operators.{op_index}",
                                     f"one of the wave's operators {spec.operators}", op)
    if spec.anchors is not None and not (path.parent / spec.anchors).is_file():
        raise SabotDataError(path, "anchors", f"an existing file under {path.parent}",
                             spec.anchors)
    if spec.anchors is not None:
        load_wave_anchors(spec, path)


def load_wave_spec(path: Path, expected_wave: int | None = None) -> WaveSpec:
    """Parse and check one wave file (without expanding it)."""
    raw = read_yaml_mapping(path)
    spec = validate(path, WaveSpec, raw)
    if expected_wave is None:
        match = _WAVE_FILE.match(path.name)
        expected_wave = int(match.group(1)) if match else spec.wave
    _check_consistency(path, expected_wave, spec)
    return spec


def load_wave_anchors(spec: WaveSpec, wave_file: Path) -> AnchorRegistry | None:
    """The wave's anchor registry (None when the wave has no FLAGS surface). It must hold one
    entry for every (task, operator) pair the wave runs."""
    if spec.anchors is None:
        return None
    path = wave_file.parent / spec.anchors
    if not path.is_file():
        raise SabotDataError(wave_file, "anchors", f"an existing file under {wave_file.parent}",
                             spec.anchors)
    registry = validate(path, AnchorRegistry, read_yaml_mapping(path))
    missing = registry.missing(list(spec.tasks), list(spec.operators))
    if missing:
        task, operator = missing[0]
        raise SabotDataError(path, "cells",
                             f"an entry for every (task, operator) of wave {spec.wave}; "
                             f"({task}, {operator}) has none", f"{len(missing)} missing")
    return registry


def load_seed_registry(path: Path, spec: WaveSpec, wave_file: Path) -> SeedRegistry:
    """Read the wave's seed registry and check it belongs to that wave."""
    if not path.is_file():
        raise SabotDataError(wave_file, "seeds_file",
                             f"an existing seed registry at {path}", spec.seeds_file)
    raw = parse_json(path.read_text(encoding="utf-8"), path, expected="well-formed JSON")
    registry = validate(path, SeedRegistry, raw)
    if registry.wave != spec.wave:
        raise SabotDataError(path, "wave", f"{spec.wave} (the wave that names this registry)",
                             registry.wave)
    _check_unique(path, "seeds", registry.seeds)
    return registry


def load_wave(wave: int | str, root: Path) -> tuple[WaveSpec, list[Cell]]:
    """The wave's spec and its whole registry, baselines first, carve-outs flagged."""
    number = parse_wave_number(wave, root)
    path = wave_path(number, root)
    spec = load_wave_spec(path, number)
    seeds_path = path.parent / SEEDS_DIR / spec.seeds_file
    registry = load_seed_registry(seeds_path, spec, path)
    return spec, expand(spec, list(registry.seeds))


# --------------------------------------------------------------------------- selection


def _as_set(value: str | int | Iterable[str | int] | None) -> set[str] | None:
    if value is None:
        return None
    if isinstance(value, str | int):
        return {str(value)}
    return {str(v) for v in value}


def select_cells(
    cells: Iterable[Cell],
    *,
    framework: str | Iterable[str] | None = None,
    config: str | Iterable[str] | None = None,
    operator: str | Iterable[str] | None = None,
    task: str | Iterable[str] | None = None,
    seed: int | Iterable[int] | None = None,
    include_carved_out: bool = True,
) -> list[Cell]:
    """Cells matching every given filter (exact matches, order kept).

    ``operator`` accepts 'baseline' for the no-fault cells. Unknown filter values raise a
    SabotDataError so a typo never silently selects nothing.
    """
    cells = list(cells)
    # A lab matrix's cells take the lab's operators and tasks; any other wave's the message
    # operators and the standard's tasks.
    lab = any(cell.task in LAB_TASKS for cell in cells)
    operators = operator_ids("transaction" if lab else "message")
    tasks = LAB_TASKS if lab else TASKS
    wanted_fw = _as_set(framework)
    wanted_cfg = _as_set(config)
    wanted_op = _as_set(operator)
    wanted_task = _as_set(task)
    wanted_seed = _as_set(seed)
    for field, wanted, known in (
        ("framework", wanted_fw, framework_names()),
        ("config", wanted_cfg, CONFIGS),
        ("operator", wanted_op, (*operators, "baseline")),
        ("task", wanted_task, tasks),
    ):
        if wanted is not None:
            unknown = sorted(wanted - set(known))
            if unknown:
                raise SabotDataError("cell filter", field, f"one of {', '.join(known)}",
                                     unknown[0])
    chosen: list[Cell] = []
    for cell in cells:
        if cell.carved_out and not include_carved_out:
            continue
        if wanted_fw is not None and cell.framework not in wanted_fw:
            continue
        if wanted_cfg is not None and cell.config not in wanted_cfg:
            continue
        if wanted_op is not None and (cell.operator or "baseline") not in wanted_op:
            continue
        if wanted_task is not None and cell.task not in wanted_task:
            continue
        if wanted_seed is not None and str(cell.seed) not in wanted_seed:
            continue
        chosen.append(cell)
    return chosen


def runnable(cells: Iterable[Cell]) -> list[Cell]:
    """The cells that actually run: everything except registered structural zeros."""
    return [cell for cell in cells if not cell.carved_out]
