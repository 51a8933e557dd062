"""Named matrices and the agent-framework candidate matrix (cells/agent-framework.yaml):
selected by name as ``--sabot-wave=agent-framework`` without changing how ``--sabot-wave=1``
reads, registered beside the frozen waves and never inside them (SPEC.md S8.1, S10.6, S11.3,
I61)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.models.cells import WaveSpec
from pytest_sabot.matrix.cells import (
    available_waves,
    load_wave,
    load_wave_spec,
    named_waves,
    parse_wave_number,
    select_cells,
    wave_path,
)

ROOT = Path(__file__).resolve().parents[2]
NAME = "agent-framework"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "cells", tmp_path / "cells")
    shutil.copytree(ROOT / "mappings", tmp_path / "mappings")
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_I61_the_candidate_is_selected_by_name_and_by_its_number() -> None:
    spec, cells = load_wave(NAME, ROOT)
    assert (spec.wave, spec.name, spec.candidate, spec.label) == (101, NAME, True, NAME)
    assert [c.id for c in load_wave(101, ROOT)[1]] == [c.id for c in cells]
    assert wave_path(NAME, ROOT) == wave_path(101, ROOT) == ROOT / "cells" / f"{NAME}.yaml"


def test_S11_numbered_waves_read_as_before() -> None:
    for arg in (1, "1", "wave1", "wave-1"):
        assert parse_wave_number(arg, ROOT) == 1
    assert len(load_wave(1, ROOT)[1]) == 1050
    assert wave_path(3, ROOT).name == "wave3.yaml"
    assert load_wave_spec(wave_path(2, ROOT)).label == "wave 2"


def test_available_waves_lists_the_numbers_then_the_names() -> None:
    assert available_waves(ROOT) == [1, 2, 3, NAME, "hung-tool", "lab"]
    assert named_waves(ROOT) == {NAME: (101, ROOT / "cells" / f"{NAME}.yaml"),
                                 "lab": (102, ROOT / "cells" / "lab.yaml"),
                                 "hung-tool": (103, ROOT / "cells" / "hung-tool.yaml")}


def test_S8_1_I61_candidate_matrix_counts() -> None:
    spec, cells = load_wave(NAME, ROOT)
    faults = [c for c in cells if c.operator is not None]
    baselines = [c for c in cells if c.operator is None]
    carved = [c for c in faults if c.carved_out]
    assert (len(faults), len(carved), len(baselines)) == (300, 75, 50)
    assert {c.framework for c in cells} == {"agent_framework"}
    assert {(c.config, c.operator) for c in carved} == {
        ("guardrail", op) for op in ("O2", "O3", "O6")
    }
    assert spec.frameworks == ["agent_framework"]


def test_I61_candidate_pairs_with_wave_3() -> None:
    candidate = load_wave_spec(wave_path(NAME, ROOT))
    three = load_wave_spec(wave_path(3, ROOT))
    for field in ("rules", "flags_protocol", "contract_revision", "redacted_materials",
                  "anchors", "configs", "operators", "tasks", "pipeline_model",
                  "downgrade_model"):
        assert getattr(candidate, field) == getattr(three, field), field
    seeds = json.loads((ROOT / "cells" / "seeds" / "agent-framework.json").read_text())
    wave3 = json.loads((ROOT / "cells" / "seeds" / "wave3.json").read_text())
    assert seeds["seeds"] == wave3["seeds"] and seeds["wave"] == 101


def test_S10_6_I61_the_carve_out_reads_like_the_magentic_one_row() -> None:
    candidate = load_wave_spec(wave_path(NAME, ROOT))
    three = load_wave_spec(wave_path(3, ROOT))
    ((af,), (mo,)) = (candidate.carve_outs, three.carve_outs)
    expected = ("guardrail", ["O2", "O3", "O6"])
    assert (af.config, af.operators) == (mo.config, mo.operators) == expected


def test_S11_3_the_frozen_waves_do_not_carry_the_candidate() -> None:
    for wave in (1, 2, 3):
        spec = load_wave_spec(wave_path(wave, ROOT))
        assert "agent_framework" not in spec.frameworks and not spec.candidate


def test_select_cells_accepts_the_candidate_framework() -> None:
    _, cells = load_wave(NAME, ROOT)
    chosen = select_cells(cells, framework="agent_framework", task="T1", operator="baseline")
    assert [c.id for c in chosen][:1] == ["agent_framework-default-baseline-T1-s11"]
    with pytest.raises(SabotDataError, match="field 'framework'"):
        select_cells(cells, framework="agent-framework")


def test_an_unknown_name_lists_the_registered_matrices(root: Path) -> None:
    with pytest.raises(SabotDataError) as info:
        load_wave("agentframework", root)
    assert info.value.field == "wave" and "agent-framework" in info.value.expected


def test_a_candidate_framework_is_refused_in_a_wave_of_the_standard() -> None:
    raw = {
        "wave": 4, "title": "t", "rules": "v0.2.1", "flags_protocol": False,
        "contract_revision": "v0.2", "seeds_file": "wave4.json",
        "frameworks": ["langgraph", "agent_framework"],
    }
    with pytest.raises(ValueError, match="candidate row only"):
        WaveSpec.model_validate(raw)


def test_a_named_matrix_file_must_carry_its_own_name(root: Path) -> None:
    _edit(root / "cells" / f"{NAME}.yaml", f"name: {NAME}", "name: other")
    with pytest.raises(SabotDataError) as info:
        load_wave(NAME, root)
    assert info.value.field == "name" and info.value.file.endswith(f"{NAME}.yaml")


def test_a_named_matrix_number_stays_clear_of_the_standards_waves(root: Path) -> None:
    _edit(root / "cells" / f"{NAME}.yaml", "wave: 101", "wave: 4")
    (root / "cells" / "seeds" / "agent-framework.json").write_text(
        (ROOT / "cells" / "seeds" / "agent-framework.json").read_text().replace("101", "4")
    )
    with pytest.raises(SabotDataError, match="wave number of 100 or more"):
        load_wave(NAME, root)


def test_two_named_matrices_may_not_share_a_number(root: Path) -> None:
    shutil.copy(root / "cells" / f"{NAME}.yaml", root / "cells" / "other.yaml")
    _edit(root / "cells" / "other.yaml", f"name: {NAME}", "name: other")
    with pytest.raises(SabotDataError, match="no other matrix has"):
        load_wave(NAME, root)


def test_a_numbered_wave_file_carries_no_name(root: Path) -> None:
    _edit(root / "cells" / "wave2.yaml", "wave: 2\n", "wave: 2\nname: second\n")
    with pytest.raises(SabotDataError) as info:
        load_wave(2, root)
    assert info.value.field == "name"
