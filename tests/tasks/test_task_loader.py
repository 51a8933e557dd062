"""Task files load into a public view and a private spec; malformed files fail with the
file, the field and what was expected."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel
from task_examples import ROOT, TASKS, copy_root

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.tasks import PublicView, load_private, load_public


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("revision", ["v0.1", "v0.2"])
def test_every_task_loads_for_both_contract_revisions(task: str, revision: str) -> None:
    view = load_public(task, ROOT, revision)
    private = load_private(task, ROOT)
    assert view.task_id == task
    assert view.contract_revision == revision
    assert revision in view.contract.revisions
    assert sorted(t.role for t in view.tools) == ["check", "data", "write"]
    assert set(private.operators) == {"O1", "O2", "O3", "O4", "O5", "O6"}
    assert private.required_effects == (view.artifact,)
    (stale_target,) = private.stale_materials
    assert stale_target == private.operators["O5"].target
    assert private.stale_materials[stale_target] != view.material(stale_target).text


def test_T2_contract_v0_1_embeds_answer_values_and_v0_2_only_markers() -> None:
    wave1 = load_public("T2", ROOT, "v0.1").contract
    wave2 = load_public("T2", ROOT, "v0.2").contract
    assert "4,800 cycles" in wave1.text
    assert "4,800" not in wave2.text
    for marker in ("cycles", "Wh/kg", "/kWh", "°C", "Institute"):
        assert f'"{marker}"' in wave2.text


def _strings(value: Any, seen: set[int] | None = None) -> list[str]:
    """Every string reachable from a value, failing on any filesystem path."""
    seen = seen if seen is not None else set()
    if id(value) in seen:
        return []
    seen.add(id(value))
    assert not isinstance(value, Path), "the public view must not hold a path"
    if isinstance(value, str):
        return [value]
    if isinstance(value, BaseModel):
        return _strings(value.model_dump(), seen)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [
            s for f in dataclasses.fields(value) for s in _strings(getattr(value, f.name), seen)
        ]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k, seen), *_strings(v, seen))]
    if isinstance(value, list | tuple | set):
        return [s for v in value for s in _strings(v, seen)]
    return []


@pytest.mark.parametrize("task", TASKS)
def test_public_view_holds_no_path_and_no_private_text(task: str) -> None:
    view = load_public(task, ROOT, "v0.2")
    private = load_private(task, ROOT)
    texts = _strings(view)
    secret = [spec.ground_truth for spec in private.operators.values()]
    secret += list(private.stale_materials.values())
    for s in secret:
        assert not any(s in t for t in texts)
    assert not any(str(ROOT) in t for t in texts)
    assert [f.name for f in dataclasses.fields(PublicView)] == [
        "task_id",
        "title",
        "brief",
        "artifact",
        "materials",
        "contract_revision",
        "contract",
        "tools",
    ]


def test_a_lab_task_is_not_a_file_task() -> None:
    """tasks/ reads the file tasks only: T6 is the lab's (lab/task_load.py), a clear error
    here, and the matrix's loader reads either kind into the same views."""
    from pytest_sabot.lab.task import LabPublicView
    from pytest_sabot.matrix import task_views

    _fails(lambda: load_public("T6", ROOT, "v0.2"), "tasks", "task", "one of T1, T2, T3, T4, T5")
    view = task_views.load_public("T6", ROOT, "v0.2")
    assert isinstance(view, LabPublicView) and isinstance(view, PublicView)
    assert [f.name for f in dataclasses.fields(LabPublicView)][-1] == "lab"
    assert task_views.load_private("T6", ROOT).criterion is None
    assert task_views.load_public("T2", ROOT, "v0.2") == load_public("T2", ROOT, "v0.2")


def test_load_public_reads_only_the_public_directory(tmp_path: Path) -> None:
    root = copy_root(tmp_path, "T3")
    shutil.rmtree(root / "tasks" / "T3" / "private")
    view = load_public("T3", root, "v0.2")
    assert view.artifact == "solution.py"
    with pytest.raises(SabotDataError, match=r"criterion\.yaml"):
        load_private("T3", root)


def _edit(path: Path, change: Any) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


def _fails(load: Any, file: str, field: str, expected: str) -> None:
    with pytest.raises(SabotDataError) as info:
        load()
    err = info.value
    assert err.file.endswith(file)
    assert err.field == field
    assert expected in err.expected


def test_unknown_key_in_task_file_names_file_field_and_expectation(tmp_path: Path) -> None:
    root = copy_root(tmp_path)
    _edit(root / "tasks/T1/public/task.yaml", lambda d: d["tools"][0].update(colour="red"))
    _fails(
        lambda: load_public("T1", root, "v0.1"),
        "public/task.yaml",
        "tools.0.colour",
        "Extra inputs are not permitted",
    )


def test_tool_without_its_role_block_is_rejected(tmp_path: Path) -> None:
    root = copy_root(tmp_path)
    _edit(root / "tasks/T1/public/task.yaml", lambda d: d["tools"][1].pop("check"))
    _fails(
        lambda: load_public("T1", root, "v0.1"),
        "public/task.yaml",
        "tools.1",
        "needs exactly the 'check' block",
    )


def test_task_without_one_tool_per_role_is_rejected(tmp_path: Path) -> None:
    root = copy_root(tmp_path)

    def two_data_tools(d: dict[str, Any]) -> None:
        d["tools"][2] = dict(d["tools"][0], name="second_lookup")

    _edit(root / "tasks/T1/public/task.yaml", two_data_tools)
    _fails(
        lambda: load_public("T1", root, "v0.1"),
        "public/task.yaml",
        "tools",
        "exactly one data, one check and one write tool",
    )


def test_missing_material_file_names_the_material_field(tmp_path: Path) -> None:
    root = copy_root(tmp_path)
    (root / "tasks/T1/public/bench_sheet.md").unlink()
    _fails(
        lambda: load_public("T1", root, "v0.1"),
        "bench_sheet.md",
        "materials.1.file",
        "an existing UTF-8 text file",
    )


def test_material_outside_the_public_directory_is_refused(tmp_path: Path) -> None:
    root = copy_root(tmp_path)
    _edit(
        root / "tasks/T1/public/task.yaml",
        lambda d: d["materials"][0].update(file="../private/criterion.yaml"),
    )
    _fails(
        lambda: load_public("T1", root, "v0.1"),
        "public/task.yaml",
        "materials.0.file",
        "a plain file name inside the same directory",
    )


def test_unknown_contract_revision_lists_the_known_ones(tmp_path: Path) -> None:
    _fails(
        lambda: load_public("T1", ROOT, "v9.9"),
        "public/task.yaml",
        "contracts",
        "a contract revision among ['v0.1', 'v0.2']",
    )


def test_contract_rule_of_unknown_kind_is_rejected(tmp_path: Path) -> None:
    root = copy_root(tmp_path)
    _edit(root / "tasks/T1/public/contract.yaml", lambda d: d["rules"].append({"kind": "vibes"}))
    with pytest.raises(SabotDataError) as info:
        load_public("T1", root, "v0.1")
    assert info.value.file.endswith("contract.yaml")
    assert info.value.field.startswith("rules.2")


def test_task_id_must_match_its_directory(tmp_path: Path) -> None:
    root = copy_root(tmp_path)
    _edit(root / "tasks/T1/public/task.yaml", lambda d: d.update(id="T2"))
    _fails(
        lambda: load_public("T1", root, "v0.1"),
        "public/task.yaml",
        "id",
        "the directory's task id 'T1'",
    )


def test_unknown_task_id_is_refused() -> None:
    _fails(lambda: load_public("T9", ROOT, "v0.1"), "tasks", "task", "one of T1, T2")


def test_invalid_yaml_names_the_file(tmp_path: Path) -> None:
    root = copy_root(tmp_path)
    (root / "tasks/T1/private/operators.yaml").write_text("task: [T1\n", encoding="utf-8")
    _fails(lambda: load_private("T1", root), "private/operators.yaml", "line 2", "valid YAML")


def test_operator_file_must_cover_all_six_operators(tmp_path: Path) -> None:
    root = copy_root(tmp_path)
    _edit(root / "tasks/T1/private/operators.yaml", lambda d: d["operators"].pop("O3"))
    _fails(
        lambda: load_private("T1", root),
        "private/operators.yaml",
        "operators",
        "missing operator specs: O3",
    )


def test_operator_on_the_wrong_seam_is_rejected(tmp_path: Path) -> None:
    root = copy_root(tmp_path)
    _edit(
        root / "tasks/T1/private/operators.yaml",
        lambda d: d["operators"]["O1"].update(seam="handoff"),
    )
    _fails(
        lambda: load_private("T1", root),
        "private/operators.yaml",
        "operators",
        "O1 must use seam 'tool_result'",
    )


def test_required_effects_must_name_the_tasks_artifact(tmp_path: Path) -> None:
    """Otherwise no baseline could pass, and every fault cell would be excluded."""
    root = copy_root(tmp_path)
    _edit(root / "tasks/T1/private/criterion.yaml",
          lambda d: d.update(required_effects=["nothing.json"]))
    _fails(
        lambda: load_private("T1", root),
        "private/criterion.yaml",
        "required_effects",
        "the task's artifact 'output.json'",
    )


def test_an_operator_that_injects_its_original_is_rejected(tmp_path: Path) -> None:
    """Such a fault lands while changing nothing, and its cell would count as a miss."""
    root = copy_root(tmp_path)
    _edit(
        root / "tasks/T1/private/operators.yaml",
        lambda d: d["operators"]["O3"].update(injected=d["operators"]["O3"]["original"]),
    )
    _fails(
        lambda: load_private("T1", root),
        "private/operators.yaml",
        "operators",
        "O3: injected is the same as original",
    )


def test_tool_operator_must_target_a_declared_tool(tmp_path: Path) -> None:
    root = copy_root(tmp_path)
    _edit(
        root / "tasks/T1/private/operators.yaml",
        lambda d: d["operators"]["O2"].update(target="run_tests"),
    )
    _fails(
        lambda: load_private("T1", root),
        "private/operators.yaml",
        "operators.O2.target",
        "one of the task's tools",
    )


def test_missing_stale_revision_names_the_operator_field(tmp_path: Path) -> None:
    root = copy_root(tmp_path)
    (root / "tasks/T1/private/stale/bench_sheet.rev-A.md").unlink()
    _fails(
        lambda: load_private("T1", root),
        "bench_sheet.rev-A.md",
        "operators.O5.stale_file",
        "an existing UTF-8 text file",
    )


def test_criterion_of_unknown_kind_is_rejected(tmp_path: Path) -> None:
    root = copy_root(tmp_path)
    _edit(root / "tasks/T1/private/criterion.yaml", lambda d: d["check"].update(kind="judge"))
    with pytest.raises(SabotDataError) as info:
        load_private("T1", root)
    assert info.value.file.endswith("criterion.yaml")
    assert info.value.field == "check"


def test_contract_file_must_serve_the_requested_revision(tmp_path: Path) -> None:
    root = copy_root(tmp_path)
    _edit(root / "tasks/T1/public/contract.yaml", lambda d: d.update(revisions=["v0.1"]))
    assert load_public("T1", root, "v0.1").contract_revision == "v0.1"
    _fails(
        lambda: load_public("T1", root, "v0.2"),
        "public/contract.yaml",
        "revisions",
        "a list naming revision 'v0.2'",
    )
