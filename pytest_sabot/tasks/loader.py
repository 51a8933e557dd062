"""Read a task directory into the public view (what a pipeline may see) and the private
spec (what only the scorer and the harness's operator seams may read).

``load_public`` opens nothing under ``private/``, and the ``PublicView`` it returns holds
texts and parsed models only: no path, no directory, nothing that leads to private data.

This module reads the file tasks T1..T5 (data, check and write tools over a workspace).
A lab task (T6) is read by :mod:`pytest_sabot.lab.task_load` into the same two views,
extended with the lab's world; :mod:`pytest_sabot.matrix.task_views` loads either kind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, TypeVar, cast

from pydantic import BaseModel

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.loading import load_yaml_model
from pytest_sabot.core.models.cells import TASKS
from pytest_sabot.core.models.defects import GROUND_TRUTH_MATERIAL
from pytest_sabot.core.models.task import (
    AddedOperatorFile,
    ContractFile,
    Criterion,
    CriterionFile,
    OperatorsFile,
    OperatorSpec,
    TaskFile,
    ToolSpec,
)
from pytest_sabot.core.operators import InjectionSpec, operator_ids

TASK_IDS: tuple[str, ...] = TASKS
"""The file tasks this module reads."""

M = TypeVar("M", bound=BaseModel)

ADDED_SPECS = "operators-*.yaml"
"""The file of one operator's spec declared after a task's operators.yaml was registered
(``operators-<id>.yaml``, beside it)."""


@dataclass(frozen=True)
class Material:
    """One material as published: its name, revision label and text."""

    name: str
    revision: str
    text: str


@dataclass(frozen=True)
class PublicView:
    """Everything a pipeline may see of one task, for one contract revision."""

    task_id: str
    title: str
    brief: str
    artifact: str
    materials: tuple[Material, ...]
    contract_revision: str
    contract: ContractFile
    tools: tuple[ToolSpec, ...]  # none for a lab task: its tools are the lab world's

    def material(self, name: str) -> Material:
        for m in self.materials:
            if m.name == name:
                return m
        raise KeyError(name)

    def tool(self, role: str) -> ToolSpec:
        """The task's tool with that role ('data', 'check' or 'write')."""
        return next(t for t in self.tools if t.role == role)


class OperatorPlan(InjectionSpec, Protocol):
    """One operator's spec on one task as the harness arms it (never from the note) and
    the scorer reads it: where the fault is planted, what it replaces (the operator's
    :class:`~pytest_sabot.core.operators.InjectionSpec`), and what catching it means."""

    @property
    def ground_truth(self) -> str: ...


@dataclass(frozen=True)
class PrivateSpec:
    """What only the scorer and the operator seams read."""

    task_id: str
    artifact: str
    required_effects: tuple[str, ...]
    criterion: Criterion | None  # None: the task's world judges the pass (a lab gate)
    operators: Mapping[str, OperatorPlan]
    stale_materials: dict[str, str]  # material name -> superseded revision text (O5)

    def operator(self, operator_id: str) -> OperatorPlan:
        return self.operators[operator_id]


def task_dir(task_id: str, root: Path, known: Sequence[str] = TASK_IDS) -> Path:
    """tasks/<task_id> under ``root``, for a task among ``known``."""
    if task_id not in known:
        raise SabotDataError(root / "tasks", "task", f"one of {', '.join(known)}", task_id)
    directory = Path(root) / "tasks" / task_id
    if not directory.is_dir():
        raise SabotDataError(directory, "", "a task directory with public/ and private/")
    return directory


def read_text(path: Path, field: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SabotDataError(path, field, "an existing UTF-8 text file") from None
    except UnicodeDecodeError:
        raise SabotDataError(path, field, "UTF-8 text") from None


def safe_name(directory: Path, name: str, file: Path, field: str) -> Path:
    candidate = (directory / name).resolve()
    if candidate.parent != directory.resolve():
        raise SabotDataError(file, field, "a plain file name inside the same directory", name)
    return candidate



class _AddedSpec(Protocol):
    """An operators-<id>.yaml file, of a file task or of a lab task."""

    task: str
    operator: str
    spec: BaseModel


def added_spec_file(private: Path, operator: str) -> Path:
    """Where the spec of an operator declared after ``operators.yaml`` lives."""
    return private / ADDED_SPECS.replace("*", operator)


def added_specs(
    private: Path, task_id: str, model: type[BaseModel]
) -> dict[str, tuple[Path, BaseModel]]:
    """The operators-<id>.yaml files of a task, read with ``model`` (a file task's or a lab
    task's format): operator -> (file, spec)."""
    found: dict[str, tuple[Path, BaseModel]] = {}
    for path in sorted(private.glob(ADDED_SPECS)):
        added = cast(_AddedSpec, load_yaml_model(path, model, top_field="spec"))
        task, operator, spec = added.task, added.operator, added.spec
        if task != task_id:
            raise SabotDataError(path, "task", f"the directory's task id {task_id!r}", task)
        if path != added_spec_file(private, operator):
            raise SabotDataError(path, "operator", f"the operator the file is named after "
                                 f"({path.stem.removeprefix('operators-')!r})", operator)
        found[operator] = (path, spec)
    return found


def spec_location(
    ops_path: Path, added: Mapping[str, tuple[Path, BaseModel]], operator: str
) -> tuple[Path, str]:
    """The file and field an operator's spec is read from: its own operators-<id>.yaml
    (field ``spec``) or operators.yaml (``operators.<id>``), for naming a bad value."""
    if operator in added:
        return added[operator][0], "spec"
    return ops_path, f"operators.{operator}"


def all_specs(
    ops_path: Path,
    listed: Mapping[str, BaseModel],
    added: Mapping[str, tuple[Path, BaseModel]],
    expected: tuple[str, ...],
) -> dict[str, BaseModel]:
    """Every operator's spec, once: those of operators.yaml and those of their own files."""
    for op, (path, _) in added.items():
        if op in listed:
            raise SabotDataError(path, "operator",
                                 f"an operator whose spec is not also in {ops_path.name}", op)
    specs = {**listed, **{op: spec for op, (_, spec) in added.items()}}
    missing = [op for op in expected if op not in specs]
    if missing:
        raise SabotDataError(ops_path, "operators",
                             f"missing operator specs: {', '.join(missing)}")
    return {op: specs[op] for op in expected}


def load_task_file(task_id: str, root: Path) -> TaskFile:
    """Parse and validate tasks/Tn/public/task.yaml (T1..T5)."""
    public = task_dir(task_id, root) / "public"
    path = public / "task.yaml"
    task = load_yaml_model(path, TaskFile, top_field="tools")
    if task.id != task_id:
        raise SabotDataError(path, "id", f"the directory's task id {task_id!r}", task.id)
    return task


def load_contract(
    task_id: str, root: Path, revision: str, task: TaskFile | None = None
) -> ContractFile:
    """One published contract revision of a task."""
    public = task_dir(task_id, root) / "public"
    task = task if task is not None else load_task_file(task_id, root)
    return read_contract(public, public / "task.yaml", task.contracts, "contracts", revision,
                         task.artifact)


def read_contract(
    public: Path, task_path: Path, revisions: Mapping[str, str], field: str, revision: str,
    artifact: str,
) -> ContractFile:
    """The contract revision ``revision`` of the task file ``task_path``, whose ``field``
    maps revisions to files under ``public``: published for the task's ``artifact``."""
    if revision not in revisions:
        raise SabotDataError(
            task_path, field, f"a contract revision among {sorted(revisions)}", revision
        )
    path = safe_name(public, revisions[revision], task_path, f"{field}.{revision}")
    contract = load_yaml_model(path, ContractFile, top_field="rules")
    if revision not in contract.revisions:
        raise SabotDataError(
            path, "revisions", f"a list naming revision {revision!r}", contract.revisions
        )
    if contract.artifact != artifact:
        raise SabotDataError(
            path, "artifact", f"the task's artifact {artifact!r}", contract.artifact
        )
    return contract


class MaterialFile(Protocol):
    """A task file's entry naming one material: its name, file under public/, revision."""

    @property
    def name(self) -> str: ...

    @property
    def file(self) -> str: ...

    @property
    def revision(self) -> str: ...


def read_materials(
    public: Path, task_path: Path, refs: Sequence[MaterialFile]
) -> list[Material]:
    """The materials ``refs`` of the task file ``task_path`` name, read from ``public``."""
    materials = []
    for i, ref in enumerate(refs):
        path = safe_name(public, ref.file, task_path, f"materials.{i}.file")
        materials.append(Material(ref.name, ref.revision, read_text(path, f"materials.{i}.file")))
    return materials


def load_public(task_id: str, root: Path, contract_revision: str) -> PublicView:
    """The public view of a task: brief, current materials, tools, one contract revision.

    Reads only tasks/Tn/public/.
    """
    public = task_dir(task_id, root) / "public"
    task_path = public / "task.yaml"
    task = load_task_file(task_id, root)
    materials = read_materials(public, task_path, task.materials)
    names = [m.name for m in materials]
    if len(set(names)) != len(names):
        raise SabotDataError(task_path, "materials", "unique material names", names)
    return PublicView(
        task_id=task.id,
        title=task.title,
        brief=task.brief,
        artifact=task.artifact,
        materials=tuple(materials),
        contract_revision=contract_revision,
        contract=load_contract(task_id, root, contract_revision, task),
        tools=tuple(task.tools),
    )


def load_private(task_id: str, root: Path) -> PrivateSpec:
    """The pass criterion, the operator specs and the superseded material revisions."""
    directory = task_dir(task_id, root)
    private = directory / "private"
    task = load_task_file(task_id, root)
    crit_path = private / "criterion.yaml"
    criterion = load_yaml_model(crit_path, CriterionFile, top_field="check")
    if criterion.task != task_id:
        raise SabotDataError(
            crit_path, "task", f"the directory's task id {task_id!r}", criterion.task
        )
    if task.artifact not in criterion.required_effects:  # no run could ever pass
        raise SabotDataError(
            crit_path, "required_effects",
            f"a list naming the task's artifact {task.artifact!r} (public/task.yaml: "
            "the file the pass criterion reads)", criterion.required_effects,
        )
    ops_path = private / "operators.yaml"
    operators = load_yaml_model(ops_path, OperatorsFile, top_field="operators")
    if operators.task != task_id:
        raise SabotDataError(
            ops_path, "task", f"the directory's task id {task_id!r}", operators.task
        )
    added = added_specs(private, task_id, AddedOperatorFile)
    specs = all_specs(ops_path, dict(operators.operators), added, operator_ids("message"))
    material_names = {m.name for m in task.materials}
    tool_names = {t.name for t in task.tools}
    stale: dict[str, str] = {}
    file_specs: dict[str, OperatorSpec] = {}
    for op_id, spec in specs.items():
        assert isinstance(spec, OperatorSpec)
        file_specs[op_id] = spec
        spec_path, field = spec_location(ops_path, added, op_id)
        if spec.seam in ("tool_result", "check_result") and spec.target not in tool_names:
            raise SabotDataError(
                spec_path,
                f"{field}.target",
                f"one of the task's tools {sorted(tool_names)}",
                spec.target,
            )
        if spec.seam == "material":
            if spec.target not in material_names:
                raise SabotDataError(
                    spec_path,
                    f"{field}.target",
                    f"one of the task's materials {sorted(material_names)}",
                    spec.target,
                )
            assert spec.stale_file is not None  # guaranteed by spec_problem
            stale_dir = private / "stale"
            path = safe_name(stale_dir, spec.stale_file, spec_path, f"{field}.stale_file")
            stale[spec.target] = read_text(path, f"{field}.stale_file")
    return PrivateSpec(
        task_id=task_id,
        artifact=task.artifact,
        required_effects=tuple(criterion.required_effects),
        criterion=criterion.check,
        operators=file_specs,
        stale_materials=stale,
    )


# ------------------------------------------------------- a published defect, reproduced



def ground_truth_section(private: PrivateSpec) -> Material:
    """The task file's ground-truth section as the published waves 1 and 2 served it to the
    T3 pipeline (a defect the standard disclosed in v0.2.1): every operator's ground-truth
    note of the task, verbatim, in operator order."""
    lines = [
        f"# {private.task_id} ground truth",
        "",
        "What a correct detection would have flagged, per fault operator:",
        "",
    ]
    for op_id in [o for o in operator_ids() if o in private.operators]:
        lines.append(f"- {op_id}: {private.operators[op_id].ground_truth.strip()}")
    text = "\n".join(lines) + "\n"
    return Material(GROUND_TRUTH_MATERIAL, "task file, ground-truth section", text)


def with_ground_truth(view: PublicView, private: PrivateSpec) -> PublicView:
    """The public view with the ground-truth section beside its materials: what a wave that
    reproduces the published defect hands the pipeline, and only such a wave."""
    return replace(view, materials=(*view.materials, ground_truth_section(private)))
