"""One loader and one translation of pydantic errors for every data file (issue 11): the
same problem reads the same whichever file format has it, and a key given twice is
refused everywhere, before anything runs."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.models.anchors import load_anchor_registry
from pytest_sabot.core.models.mapping import load_mapping_file
from pytest_sabot.core.models.rules import load_rule_book
from pytest_sabot.core.paths import standard_root
from pytest_sabot.gateway.prices import load_prices
from pytest_sabot.lab.scenario_load import load_scenario, shipped_scenarios
from pytest_sabot.matrix.cells import load_wave_spec
from pytest_sabot.tasks.loader import load_task_file

ROOT = standard_root()


def _task_loader(path: Path) -> object:
    return load_task_file("T1", path.parents[3])


# (a shipped file, the function that loads a copy of it, a top-level key it requires)
FILES: list[tuple[str, Path, Callable[[Path], object], str]] = [
    ("wave", ROOT / "cells" / "wave2.yaml", lambda p: load_wave_spec(p, 2), "seeds_file"),
    ("anchors", ROOT / "cells" / "anchors-wave3.yaml", load_anchor_registry, "cells"),
    ("mapping", ROOT / "mappings" / "crewai.yaml", load_mapping_file, "revisions"),
    ("rules", ROOT / "mappings" / "rules.yaml", load_rule_book, "versions"),
    ("task", ROOT / "tasks" / "T1" / "public" / "task.yaml", _task_loader, "brief"),
    ("prices", Path(__file__).parents[2] / "pytest_sabot/gateway/prices.yaml", load_prices,
     "models"),
    ("scenario", shipped_scenarios()[0], load_scenario, "world"),
]
IDS = [name for name, *_ in FILES]


def _copy(tmp_path: Path, source: Path) -> Path:
    if source.parent.name == "public":  # a task file is read from its task directory
        target_root = tmp_path / "root"
        shutil.copytree(ROOT / "tasks" / "T1", target_root / "tasks" / "T1")
        return target_root / "tasks" / "T1" / "public" / source.name
    target = tmp_path / source.name
    shutil.copy(source, target)
    if source.parent.name == "cells":  # a wave file checks its anchors and rules beside it
        shutil.copytree(ROOT / "cells", tmp_path / "cells")
        shutil.copytree(ROOT / "mappings", tmp_path / "mappings")
        target = tmp_path / "cells" / source.name
    return target


def _refused(load: Callable[[Path], object], path: Path) -> SabotDataError:
    with pytest.raises(SabotDataError) as info:
        load(path)
    return info.value


@pytest.mark.parametrize(("name", "source", "load", "required"), FILES, ids=IDS)
def test_S8_1_every_data_file_refuses_a_key_given_twice(
    tmp_path: Path, name: str, source: Path, load: Callable[[Path], object], required: str
) -> None:
    path = _copy(tmp_path, source)
    load(path)  # the shipped file itself loads
    first_key = next(line for line in path.read_text().splitlines() if line and line[0].isalpha())
    path.write_text(path.read_text() + "\n" + first_key + "\n", encoding="utf-8")
    err = _refused(load, path)
    assert err.file == str(path)
    assert err.field.startswith("line ")
    assert err.expected == "valid YAML"
    assert "duplicate key" in str(err.got)


@pytest.mark.parametrize(("name", "source", "load", "required"), FILES, ids=IDS)
def test_S8_1_an_unknown_key_reads_the_same_in_every_file_format(
    tmp_path: Path, name: str, source: Path, load: Callable[[Path], object], required: str
) -> None:
    path = _copy(tmp_path, source)
    path.write_text(path.read_text() + "\ntemperature: 0\n", encoding="utf-8")
    err = _refused(load, path)
    assert (err.file, err.field) == (str(path), "temperature")
    assert err.expected.startswith("only known keys; 'temperature' is unknown here")
    assert "known fields are: " in err.expected and required in err.expected


@pytest.mark.parametrize(("name", "source", "load", "required"), FILES, ids=IDS)
def test_S8_1_a_missing_key_reads_the_same_in_every_file_format(
    tmp_path: Path, name: str, source: Path, load: Callable[[Path], object], required: str
) -> None:
    path = _copy(tmp_path, source)
    kept, skipping = [], False
    for line in path.read_text().splitlines():
        if line.startswith(f"{required}:"):
            skipping = True
            continue
        if skipping and (line.startswith((" ", "-")) or not line.strip()):
            continue
        skipping = False
        kept.append(line)
    body = "\n".join(line for line in kept if not line.startswith("#")).strip()
    path.write_text((body or "{}") + "\n", encoding="utf-8")
    err = _refused(load, path)
    assert (err.file, err.field, err.expected) == (
        str(path), required, "a value (this field is required)"
    )
    assert err.got is None


@pytest.mark.parametrize(("name", "source", "load", "required"), FILES, ids=IDS)
def test_S8_1_a_file_that_is_not_a_mapping_reads_the_same_in_every_file_format(
    tmp_path: Path, name: str, source: Path, load: Callable[[Path], object], required: str
) -> None:
    path = _copy(tmp_path, source)
    path.write_text("- just\n- a list\n", encoding="utf-8")
    err = _refused(load, path)
    assert (err.file, err.field, err.expected) == (
        str(path), "(top level)", "a mapping at the top level"
    )
