"""Bad wave, seed and anchor files fail with the file, the field and what was expected."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.matrix.cells import load_wave

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "cells", tmp_path / "cells")
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _error(root: Path, wave: int | str = 2) -> SabotDataError:
    with pytest.raises(SabotDataError) as info:
        load_wave(wave, root)
    return info.value


def test_unknown_wave_names_the_known_waves(root: Path) -> None:
    err = _error(root, 9)
    assert err.field == "wave"
    assert "known waves: 1, 2, 3" in str(err)
    assert err.file.endswith("cells")


def test_wave_argument_that_is_not_a_number(root: Path) -> None:
    err = _error(root, "second")
    assert err.field == "wave"
    assert "wave number" in err.expected


def test_wave_accepts_its_spellings(root: Path) -> None:
    assert load_wave("wave2", root)[0].wave == load_wave("2", root)[0].wave == 2


def test_malformed_yaml_names_file_and_line(root: Path) -> None:
    path = root / "cells" / "wave2.yaml"
    _edit(path, "frameworks: [langgraph, crewai, autogen]", "frameworks: [langgraph, crewai")
    err = _error(root)
    assert err.file == str(path)
    assert err.field.startswith("line ")
    assert "valid YAML" in str(err)


def test_duplicate_key_is_refused(root: Path) -> None:
    path = root / "cells" / "wave1.yaml"
    path.write_text(path.read_text() + "rules: v0.2.1\n")
    err = _error(root, 1)
    assert "duplicate key 'rules'" in str(err)
    assert err.file == str(path)


def test_top_level_must_be_a_mapping(root: Path) -> None:
    path = root / "cells" / "wave1.yaml"
    path.write_text("- just\n- a list\n")
    err = _error(root, 1)
    assert (err.file, err.field) == (str(path), "(top level)")
    assert "mapping" in err.expected


@pytest.mark.parametrize(
    ("old", "new", "field", "expected"),
    [
        ("frameworks: [langgraph, crewai, autogen]", "frameworks: [langgraph, crewai, smolagents]",
         "frameworks.2", "'langgraph', 'crewai', 'autogen' or 'agent_framework'"),
        ("operators: [O1, O2, O3, O4, O5, O6]", "operators: [O1, O2, O3, O4, O5, O99]",
         "operators.5", "'O1'"),
        ("tasks: [T1, T2, T3, T4, T5]", "tasks: [T1, T2, T3, T4, T7]", "tasks.4", "'T5'"),
        ("rules: v0.2.0", "rules: v9.9.9", "rules", "'v0.2.1'"),
        ("    operators: [O2, O3, O6]", "    operators: [O2, O3, O7]", "carve_outs.0.operators.2",
         "'O6'"),
    ],
)
def test_unknown_ids_name_the_field_and_the_allowed_values(
    root: Path, old: str, new: str, field: str, expected: str
) -> None:
    path = root / "cells" / "wave2.yaml"
    _edit(path, old, new)
    err = _error(root)
    assert (err.file, err.field) == (str(path), field)
    assert expected in err.expected


def test_unknown_field_lists_the_known_fields(root: Path) -> None:
    path = root / "cells" / "wave1.yaml"
    path.write_text(path.read_text() + "temperature: 0\n")
    err = _error(root, 1)
    assert (err.file, err.field) == (str(path), "temperature")
    assert "known fields are" in err.expected and "seeds_file" in err.expected


def test_missing_required_field(root: Path) -> None:
    path = root / "cells" / "wave1.yaml"
    _edit(path, "seeds_file: wave1.json\n", "")
    err = _error(root, 1)
    assert (err.file, err.field) == (str(path), "seeds_file")
    assert "required" in err.expected


def test_wave_number_must_match_the_file_name(root: Path) -> None:
    path = root / "cells" / "wave2.yaml"
    _edit(path, "wave: 2", "wave: 3")
    err = _error(root)
    assert (err.file, err.field, err.got) == (str(path), "wave", 3)
    assert "2" in err.expected


def test_flags_need_v02_rules(root: Path) -> None:
    path = root / "cells" / "wave1.yaml"
    _edit(path, "flags_protocol: false\n", "flags_protocol: true\n")
    _edit(path, "anchors: null", "anchors: anchors-wave2.yaml")
    err = _error(root, 1)
    assert (err.file, err.field) == (str(path), "flags_protocol")
    assert "v0.1" in err.expected


def test_carve_out_outside_the_wave_matrix(root: Path) -> None:
    path = root / "cells" / "wave2.yaml"
    _edit(path, "configs: [default, guardrail]", "configs: [default]")
    err = _error(root)
    assert (err.file, err.field) == (str(path), "carve_outs.0.config")


def test_missing_seed_registry(root: Path) -> None:
    (root / "cells" / "seeds" / "wave2.json").unlink()
    err = _error(root)
    assert err.file == str(root / "cells" / "wave2.yaml")
    assert err.field == "seeds_file"
    assert "seed registry" in err.expected


def test_seed_registry_of_another_wave(root: Path) -> None:
    path = root / "cells" / "seeds" / "wave2.json"
    data = json.loads(path.read_text())
    data["wave"] = 1
    path.write_text(json.dumps(data))
    err = _error(root)
    assert (err.file, err.field, err.got) == (str(path), "wave", 1)
    assert "2" in err.expected


def test_seed_registry_with_a_repeated_seed(root: Path) -> None:
    path = root / "cells" / "seeds" / "wave2.json"
    data = json.loads(path.read_text())
    data["seeds"] = [11, 12, 12]
    path.write_text(json.dumps(data))
    err = _error(root)
    assert (err.file, err.field, err.got) == (str(path), "seeds.2", 12)


def test_seed_registry_with_a_non_integer_seed(root: Path) -> None:
    path = root / "cells" / "seeds" / "wave2.json"
    data = json.loads(path.read_text())
    data["seeds"] = [11, "twelve"]
    path.write_text(json.dumps(data))
    err = _error(root)
    assert (err.file, err.field) == (str(path), "seeds.1")
    assert "integer" in err.expected


def test_seed_registry_that_is_not_json(root: Path) -> None:
    path = root / "cells" / "seeds" / "wave2.json"
    path.write_text("{wave: 2")
    err = _error(root)
    assert err.file == str(path)
    assert "JSON" in err.expected


def test_missing_anchor_registry(root: Path) -> None:
    (root / "cells" / "anchors-wave2.yaml").unlink()
    err = _error(root)
    assert (err.file, err.field) == (str(root / "cells" / "wave2.yaml"), "anchors")
    assert "existing file" in err.expected


def test_anchor_registry_without_a_cell_of_the_wave(root: Path) -> None:
    path = root / "cells" / "anchors-wave2.yaml"
    _edit(path, "  - task: T3\n    operator: O4\n    anchors: [\"highland\"]\n", "")
    err = _error(root)
    assert (err.file, err.field) == (str(path), "cells")
    assert "(T3, O4)" in err.expected


def test_anchor_registry_with_an_unquoted_number(root: Path) -> None:
    path = root / "cells" / "anchors-wave2.yaml"
    _edit(path, 'anchors: ["47.1", "74.1"]', "anchors: [47.1, \"74.1\"]")
    err = _error(root)
    assert err.file == str(path)
    assert err.field.startswith("cells.0.anchors")
    assert "quoted" in err.expected


def test_anchor_registry_with_a_malformed_yaml(root: Path) -> None:
    path = root / "cells" / "anchors-wave3.yaml"
    path.write_text(path.read_text() + "  - task: [T1\n")
    err = _error(root, 3)
    assert err.file == str(path)
    assert err.field.startswith("line ")
    assert "valid YAML" in err.expected


def test_anchor_registry_with_a_cell_registered_twice(root: Path) -> None:
    path = root / "cells" / "anchors-wave2.yaml"
    path.write_text(path.read_text() + '  - task: T1\n    operator: O1\n    anchors: ["x"]\n')
    err = _error(root)
    assert err.file == str(path)
    assert "(T1, O1) is registered twice" in err.expected


def test_anchor_registry_with_an_unknown_operator(root: Path) -> None:
    path = root / "cells" / "anchors-wave3.yaml"
    _edit(path, "operator: O6", "operator: O99")
    err = _error(root, 3)
    assert err.file == str(path)
    assert err.field.endswith(".operator")
    assert "'O6'" in err.expected
