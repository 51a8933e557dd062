"""Issue 22 item 3, SPEC I8 and I86: waves 1 and 2 reproduce the published T3 instrument.

The standard (v0.2.1 amendment, item 4) says both published waves served the T3 task
file's ground-truth section to the pipeline and that wave 3 serves redacted material. The
defect is registered in cells/published-defects.yaml; the harness hands exactly that
section to T3 runs of waves 1 and 2 and to no other run; the registry moves the
registration hash of waves 1 and 2 alone; results.json carries the disclosure with the
standard's sensitivity bound."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.models.cells import TASKS
from pytest_sabot.core.models.defects import GROUND_TRUTH_MATERIAL
from pytest_sabot.harness.run import task_views
from pytest_sabot.matrix.defects import DEFECTS_FILE, load_published_defects
from pytest_sabot.matrix.standard import load_standard
from pytest_sabot.results import build_results

ROOT = Path(__file__).resolve().parents[2]


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(ROOT / folder, root / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_I86_the_registry_names_the_t3_defect_of_waves_1_and_2_with_its_bound() -> None:
    (defect,) = load_published_defects(ROOT).defects
    assert (defect.id, defect.disclosed, defect.waves, defect.task) == (
        "t3-ground-truth-served", "v0.2.1", [1, 2], "T3")
    assert defect.serves == "ground_truth_notes"
    assert (defect.sensitivity.published_median, defect.sensitivity.median_without) == (
        0.550, 0.536)
    assert "55.0% -> 53.6%" in defect.sensitivity.text


@pytest.mark.parametrize("wave", [1, 2])
def test_I86_waves_1_and_2_hand_the_t3_pipeline_the_ground_truth_section(wave: int) -> None:
    std = load_standard(wave)
    view, private = task_views(std.root, std.wave, "T3")
    section = view.material(GROUND_TRUTH_MATERIAL).text
    for op_id, spec in private.operators.items():
        assert f"- {op_id}: {spec.ground_truth.strip()}" in section, op_id
    # Beside the public view, never instead of it: the tariff sheet is still there.
    assert [m.name for m in view.materials] == ["tariff_sheet.md", GROUND_TRUTH_MATERIAL]
    # Nothing else private: not the criterion's expected charges, not the stale revision.
    assert "376.5" not in section and "209.09" not in section
    assert not any(stale in m.text for m in view.materials
                   for stale in private.stale_materials.values())


@pytest.mark.parametrize("wave", [1, 2, 3, "agent-framework"])
@pytest.mark.parametrize("task", [t for t in TASKS if t != "T3"])
def test_I86_no_other_task_and_no_later_wave_is_served_ground_truth(
    wave: int | str, task: str
) -> None:
    std = load_standard(wave)
    view, private = task_views(std.root, std.wave, task)
    notes = [spec.ground_truth for spec in private.operators.values()]
    assert GROUND_TRUTH_MATERIAL not in [m.name for m in view.materials]
    assert not any(note in m.text for m in view.materials for note in notes)


@pytest.mark.parametrize("wave", [3, "agent-framework"])
def test_I86_wave_3_serves_redacted_t3_material(wave: int | str) -> None:
    std = load_standard(wave)
    view, private = task_views(std.root, std.wave, "T3")
    assert [m.name for m in view.materials] == ["tariff_sheet.md"]
    notes = [spec.ground_truth for spec in private.operators.values()]
    assert not any(note in m.text for m in view.materials for note in notes)


@pytest.mark.slow
def test_I86_the_registry_moves_the_registration_hash_of_waves_1_and_2_alone(
    tmp_path: Path,
) -> None:
    """A frozen wave's registration hash changes only when its instrument does: the
    registry is hashed into the waves it names, never into wave 3, a candidate or the
    lab."""
    root = _copy(tmp_path)
    waves: list[int | str] = [1, 2, 3, "agent-framework", "lab"]
    with_registry = {w: load_standard(w, root).registration_hash() for w in waves}
    (root / "cells" / DEFECTS_FILE).unlink()
    without = {w: load_standard(w, root).registration_hash() for w in waves}
    assert with_registry[1] != without[1] and with_registry[2] != without[2]
    for wave in (3, "agent-framework", "lab"):
        assert with_registry[wave] == without[wave], wave
    # ... and every edit of the registry moves waves 1 and 2 again, and nothing else.
    path = root / "cells" / DEFECTS_FILE
    shutil.copy(ROOT / "cells" / DEFECTS_FILE, path)
    path.write_text(path.read_text() + "\n# a comment\n")
    edited = {w: load_standard(w, root).registration_hash() for w in waves}
    assert edited[1] != with_registry[1]
    assert edited[3] == with_registry[3] and edited["lab"] == with_registry["lab"]


def test_I86_a_malformed_registry_names_the_file_and_the_field(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    path = root / "cells" / DEFECTS_FILE
    raw = yaml.safe_load(path.read_text())
    raw["defects"][0]["waves"] = []
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(SabotDataError) as err:
        load_standard(1, root)
    assert DEFECTS_FILE in str(err.value) and "waves" in str(err.value)


@pytest.mark.parametrize(("wave", "disclosed"), [(1, True), (2, True), (3, False)])
def test_I86_results_json_carries_the_disclosure_and_its_bound(
    wave: int, disclosed: bool, tmp_path: Path
) -> None:
    results = build_results(load_standard(wave), tmp_path, model="sim:realistic")
    if not disclosed:
        assert results.disclosures == [] and results.scoreboard.sensitivity == []
        return
    (d,) = results.disclosures
    assert d.task == "T3" and d.bound.endswith("55.0% -> 53.6%")
    assert (d.published_median, d.published_median_without) == (0.550, 0.536)
    assert [s.task for s in results.scoreboard.sensitivity] == ["T3"]
