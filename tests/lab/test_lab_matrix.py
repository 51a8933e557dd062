"""The lab matrix (cells/lab.yaml): registered beside the frozen waves and never inside
them. Its cells are collected with stable ids, the lab's operators and tasks run in it
alone, and none of its files moves the registration hash or the counts of another wave."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from pytest_sabot.core.models.cells import WaveSpec
from pytest_sabot.matrix.cells import lab_files, load_wave, runnable
from pytest_sabot.matrix.standard import load_standard

ROOT = Path(__file__).resolve().parents[2]
FROZEN = {1: (1050, 1050), 2: (1050, 975), 3: (1050, 975), "agent-framework": (350, 275)}


def _copy(tmp_path: Path, *, with_lab: bool) -> Path:
    root = tmp_path / ("with-lab" if with_lab else "without-lab")
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(ROOT / folder, root / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    if not with_lab:
        for path in lab_files(root):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    return root


def test_L_lab_matrix_is_collected_with_stable_ids() -> None:
    spec, cells = load_wave("lab", ROOT)
    again = [c.id for c in load_wave("lab", ROOT)[1]]
    assert spec.lab and spec.name == "lab" and spec.wave >= 100
    assert [c.id for c in cells] == again and len(set(again)) == 180
    assert [c.id for c in cells[:2]] == ["langgraph-default-baseline-T6-s11",
                                        "langgraph-default-baseline-T6-s12"]
    assert cells[30].id == "langgraph-default-O7-T6-s11"
    assert cells[-1].id == "autogen-guardrail-O11-T6-s15"
    assert all(c.is_baseline for c in cells[:30]) and not any(c.is_baseline for c in cells[30:])
    assert {c.framework for c in cells} == {"langgraph", "crewai", "autogen"}
    assert {c.operator for c in cells[30:]} == {"O7", "O8", "O9", "O10", "O11"}


@pytest.mark.parametrize("wave", list(FROZEN))
def test_L_frozen_waves_keep_their_registration_hash_and_counts(
    wave: int | str, tmp_path: Path
) -> None:
    with_lab = load_standard(wave, _copy(tmp_path, with_lab=True))
    without = load_standard(wave, _copy(tmp_path, with_lab=False))
    assert with_lab.registration_hash() == without.registration_hash()
    assert (len(with_lab.cells), len(runnable(with_lab.cells))) == FROZEN[wave]


@pytest.mark.slow
def test_L_the_lab_hash_covers_the_lab_files_and_nothing_else_moves(tmp_path: Path) -> None:
    root = _copy(tmp_path, with_lab=True)
    before = {w: load_standard(w, root).registration_hash() for w in (3, "lab")}
    request = root / "tasks" / "T6" / "public" / "request.md"
    request.write_text(request.read_text() + "\n")
    after = {w: load_standard(w, root).registration_hash() for w in (3, "lab")}
    assert after[3] == before[3]
    assert after["lab"] != before["lab"]


def _spec(**change: object) -> dict[str, object]:
    base: dict[str, object] = {
        "wave": 150, "name": "x", "title": "t", "rules": "v0.2.1", "flags_protocol": False,
        "contract_revision": "v0.2", "seeds_file": "x.json",
    }
    return {**base, **change}


def test_L_lab_operators_and_tasks_run_only_in_a_lab_matrix() -> None:
    with pytest.raises(ValidationError, match="O8 belongs to the fault lab"):
        WaveSpec.model_validate(_spec(operators=["O1", "O8"]))
    with pytest.raises(ValidationError, match="T6 belongs to the fault lab"):
        WaveSpec.model_validate(_spec(tasks=["T1", "T6"]))
    with pytest.raises(ValidationError, match="only the lab's operators"):
        WaveSpec.model_validate(_spec(lab=True, operators=["O7", "O3"], tasks=["T6"]))
    with pytest.raises(ValidationError, match="only the lab's tasks"):
        WaveSpec.model_validate(_spec(lab=True, operators=["O7"], tasks=["T2"]))
    ok = WaveSpec.model_validate(_spec(lab=True, operators=["O7"], tasks=["T6"]))
    assert ok.lab


def test_L_a_standard_wave_naming_a_lab_operator_is_a_clear_error(tmp_path: Path) -> None:
    from pytest_sabot.core.errors import SabotDataError

    root = _copy(tmp_path, with_lab=True)
    path = root / "cells" / "wave2.yaml"
    path.write_text(path.read_text().replace("operators: [O1, O2, O3, O4, O5, O6]",
                                             "operators: [O1, O2, O3, O4, O5, O9]", 1))
    with pytest.raises(SabotDataError) as info:
        load_wave(2, root)
    assert str(path) in str(info.value) and "O9 belongs to the fault lab" in str(info.value)


def test_L_selecting_cells_knows_the_lab_ids_in_the_lab_matrix_only() -> None:
    from pytest_sabot.core.errors import SabotDataError
    from pytest_sabot.matrix.cells import select_cells

    lab = load_wave("lab", ROOT)[1]
    assert len(select_cells(lab, operator="O8")) == 30
    with pytest.raises(SabotDataError, match="operator"):
        select_cells(lab, operator="O3")
    with pytest.raises(SabotDataError, match="operator"):
        select_cells(load_wave(1, ROOT)[1], operator="O8")
