"""Read a task directory into the public view (what a pipeline may see) and the private
spec (what only the scorer and the harness's operator seams may read).

``load_public`` opens nothing under ``private/``, and the ``PublicView`` it returns holds
texts and parsed models only: no path, no directory, nothing that leads to private data.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.loading import load_yaml_model
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
from pytest_sabot.core.operators import lab_operator_ids, operator_ids
from pytest_sabot.tasks.lab_task import (
    LAB_TASKS,
    LabAddedOperatorFile,
    LabCriterionFile,
    LabGateCriterion,
    LabOperatorsFile,
    LabOperatorSpec,
    LabPrivate,
    LabPublic,
    LabTaskFile,
    LabWorldFile,
    is_lab_task,
)

TASK_IDS = ("T1", "T2", "T3", "T4", "T5", *LAB_TASKS)
ADDED_SPECS = "operators-*.yaml"
"""The file of one operator's spec declared after a task's operators.yaml was registered
(``operators-<id>.yaml``, beside it)."""

M = TypeVar("M", bound=BaseModel)


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
    tools: tuple[ToolSpec, ...]
    lab: LabPublic | None = None  # a lab task (T6): its request and the lab tools instead

    def material(self, name: str) -> Material:
        for m in self.materials:
            if m.name == name:
                return m
        raise KeyError(name)

    def tool(self, role: str) -> ToolSpec:
        """The task's tool with that role ('data', 'check' or 'write')."""
        return next(t for t in self.tools if t.role == role)


@dataclass(frozen=True)
class PrivateSpec:
    """What only the scorer and the operator seams read."""

    task_id: str
    artifact: str
    required_effects: tuple[str, ...]
    criterion: Criterion | LabGateCriterion
    operators: dict[str, OperatorSpec | LabOperatorSpec]
    stale_materials: dict[str, str]  # material name -> superseded revision text (O5)
    lab: LabPrivate | None = None  # a lab task (T6): the world behind its tools

    def operator(self, operator_id: str) -> OperatorSpec | LabOperatorSpec:
        return self.operators[operator_id]


def _task_dir(task_id: str, root: Path) -> Path:
    if task_id not in TASK_IDS:
        raise SabotDataError(root / "tasks", "task", f"one of {', '.join(TASK_IDS)}", task_id)
    directory = Path(root) / "tasks" / task_id
    if not directory.is_dir():
        raise SabotDataError(directory, "", "a task directory with public/ and private/")
    return directory


def _read_text(path: Path, field: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SabotDataError(path, field, "an existing UTF-8 text file") from None
    except UnicodeDecodeError:
        raise SabotDataError(path, field, "UTF-8 text") from None


def _safe_name(directory: Path, name: str, file: Path, field: str) -> Path:
    candidate = (directory / name).resolve()
    if candidate.parent != directory.resolve():
        raise SabotDataError(file, field, "a plain file name inside the same directory", name)
    return candidate


def added_spec_file(private: Path, operator: str) -> Path:
    """Where the spec of an operator declared after ``operators.yaml`` lives."""
    return private / ADDED_SPECS.replace("*", operator)


def _added_specs(
    private: Path, task_id: str, model: type[AddedOperatorFile] | type[LabAddedOperatorFile]
) -> dict[str, tuple[Path, OperatorSpec | LabOperatorSpec]]:
    """The operators-<id>.yaml files of a task: operator -> (file, spec)."""
    found: dict[str, tuple[Path, OperatorSpec | LabOperatorSpec]] = {}
    for path in sorted(private.glob(ADDED_SPECS)):
        added = load_yaml_model(path, model, top_field="spec")
        if added.task != task_id:
            raise SabotDataError(path, "task", f"the directory's task id {task_id!r}",
                                 added.task)
        if path != added_spec_file(private, added.operator):
            raise SabotDataError(path, "operator", f"the operator the file is named after "
                                 f"({path.stem.removeprefix('operators-')!r})", added.operator)
        found[added.operator] = (path, added.spec)
    return found


def _all_specs(
    ops_path: Path,
    listed: dict[str, OperatorSpec | LabOperatorSpec],
    added: dict[str, tuple[Path, OperatorSpec | LabOperatorSpec]],
    expected: tuple[str, ...],
) -> dict[str, OperatorSpec | LabOperatorSpec]:
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
    if is_lab_task(task_id):
        raise SabotDataError(Path(root) / "tasks" / task_id, "task",
                             "a task with data, check and write tools (T1..T5)", task_id)
    public = _task_dir(task_id, root) / "public"
    path = public / "task.yaml"
    task = load_yaml_model(path, TaskFile, top_field="tools")
    if task.id != task_id:
        raise SabotDataError(path, "id", f"the directory's task id {task_id!r}", task.id)
    return task


def load_contract(
    task_id: str, root: Path, revision: str, task: TaskFile | None = None
) -> ContractFile:
    """One published contract revision of a task."""
    public = _task_dir(task_id, root) / "public"
    task_path = public / "task.yaml"
    task = task if task is not None else load_task_file(task_id, root)
    if revision not in task.contracts:
        raise SabotDataError(
            task_path, "contracts", f"a contract revision among {sorted(task.contracts)}", revision
        )
    path = _safe_name(public, task.contracts[revision], task_path, f"contracts.{revision}")
    contract = load_yaml_model(path, ContractFile, top_field="rules")
    if revision not in contract.revisions:
        raise SabotDataError(
            path, "revisions", f"a list naming revision {revision!r}", contract.revisions
        )
    if contract.artifact != task.artifact:
        raise SabotDataError(
            path, "artifact", f"the task's artifact {task.artifact!r}", contract.artifact
        )
    return contract


def load_public(task_id: str, root: Path, contract_revision: str) -> PublicView:
    """The public view of a task: brief, current materials, tools, one contract revision.

    Reads only tasks/Tn/public/.
    """
    if is_lab_task(task_id):
        return _load_lab_public(task_id, root, contract_revision)
    public = _task_dir(task_id, root) / "public"
    task_path = public / "task.yaml"
    task = load_task_file(task_id, root)
    materials = []
    for i, ref in enumerate(task.materials):
        path = _safe_name(public, ref.file, task_path, f"materials.{i}.file")
        materials.append(Material(ref.name, ref.revision, _read_text(path, f"materials.{i}.file")))
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
    if is_lab_task(task_id):
        return _load_lab_private(task_id, root)
    directory = _task_dir(task_id, root)
    private = directory / "private"
    task = load_task_file(task_id, root)
    crit_path = private / "criterion.yaml"
    criterion = load_yaml_model(crit_path, CriterionFile, top_field="check")
    if criterion.task != task_id:
        raise SabotDataError(
            crit_path, "task", f"the directory's task id {task_id!r}", criterion.task
        )
    ops_path = private / "operators.yaml"
    operators = load_yaml_model(ops_path, OperatorsFile, top_field="operators")
    if operators.task != task_id:
        raise SabotDataError(
            ops_path, "task", f"the directory's task id {task_id!r}", operators.task
        )
    added = _added_specs(private, task_id, AddedOperatorFile)
    specs = _all_specs(ops_path, dict(operators.operators), added, operator_ids("message"))
    material_names = {m.name for m in task.materials}
    tool_names = {t.name for t in task.tools}
    stale: dict[str, str] = {}
    for op_id, spec in specs.items():
        assert isinstance(spec, OperatorSpec)
        spec_path, field = ((added[op_id][0], "spec") if op_id in added
                            else (ops_path, f"operators.{op_id}"))
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
            path = _safe_name(stale_dir, spec.stale_file, spec_path, f"{field}.stale_file")
            stale[spec.target] = _read_text(path, f"{field}.stale_file")
    return PrivateSpec(
        task_id=task_id,
        artifact=task.artifact,
        required_effects=tuple(criterion.required_effects),
        criterion=criterion.check,
        operators=specs,
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
        note = getattr(private.operators[op_id], "ground_truth", None)
        if isinstance(note, str):
            lines.append(f"- {op_id}: {note.strip()}")
    text = "\n".join(lines) + "\n"
    return Material(GROUND_TRUTH_MATERIAL, "task file, ground-truth section", text)


def with_ground_truth(view: PublicView, private: PrivateSpec) -> PublicView:
    """The public view with the ground-truth section beside its materials: what a wave that
    reproduces the published defect hands the pipeline, and only such a wave."""
    return replace(view, materials=(*view.materials, ground_truth_section(private)))


# --------------------------------------------------------------------------- lab tasks


def load_lab_task_file(task_id: str, root: Path) -> LabTaskFile:
    """Parse and validate a lab task's public/task.yaml (T6)."""
    public = _task_dir(task_id, root) / "public"
    path = public / "task.yaml"
    task = load_yaml_model(path, LabTaskFile, top_field="request")
    if task.id != task_id:
        raise SabotDataError(path, "id", f"the directory's task id {task_id!r}", task.id)
    return task


def _load_lab_public(task_id: str, root: Path, contract_revision: str) -> PublicView:
    public = _task_dir(task_id, root) / "public"
    task_path = public / "task.yaml"
    task = load_lab_task_file(task_id, root)
    materials = []
    for i, ref in enumerate(task.materials):
        path = _safe_name(public, ref.file, task_path, f"materials.{i}.file")
        materials.append(Material(ref.name, ref.revision, _read_text(path, f"materials.{i}.file")))
    first = materials[0].text
    for field, value in task.request.model_dump(mode="json").items():
        if f"{field}: {value}" not in first:
            raise SabotDataError(
                task_path, f"request.{field}",
                f"the value stated in {task.materials[0].file} ('{field}: ...' line)", value,
            )
    if contract_revision not in task.contract_revisions:
        raise SabotDataError(task_path, "contract_revisions",
                             f"a contract revision among {sorted(task.contract_revisions)}",
                             contract_revision)
    contract_path = _safe_name(public, task.contract_revisions[contract_revision], task_path,
                               f"contract_revisions.{contract_revision}")
    contract = load_yaml_model(contract_path, ContractFile, top_field="rules")
    if contract_revision not in contract.revisions:
        raise SabotDataError(contract_path, "revisions",
                             f"a list naming revision {contract_revision!r}", contract.revisions)
    if contract.artifact != task.artifact:
        raise SabotDataError(contract_path, "artifact", f"the task's artifact {task.artifact!r}",
                             contract.artifact)
    return PublicView(
        task_id=task.id,
        title=task.title,
        brief=task.brief,
        artifact=task.artifact,
        materials=tuple(materials),
        contract_revision=contract_revision,
        contract=contract,
        tools=(),
        lab=LabPublic(request=task.request, capabilities=tuple(task.capabilities),
                      contracts=task.contracts),
    )


def _load_lab_private(task_id: str, root: Path) -> PrivateSpec:
    from pytest_sabot.lab.scenario_load import reference_problems
    from pytest_sabot.tasks.lab_task import cell_scenario

    private = _task_dir(task_id, root) / "private"
    public_path = _task_dir(task_id, root) / "public" / "task.yaml"
    task = load_lab_task_file(task_id, root)
    crit_path = private / "criterion.yaml"
    criterion = load_yaml_model(crit_path, LabCriterionFile, top_field="check")
    world_path = private / "world.yaml"
    world = load_yaml_model(world_path, LabWorldFile, top_field="world")
    ops_path = private / "operators.yaml"
    operators = load_yaml_model(ops_path, LabOperatorsFile, top_field="operators")
    for path, found in ((crit_path, criterion.task), (world_path, world.task),
                        (ops_path, operators.task)):
        if found != task_id:
            raise SabotDataError(path, "task", f"the directory's task id {task_id!r}", found)
    added = _added_specs(private, task_id, LabAddedOperatorFile)
    specs = _all_specs(ops_path, dict(operators.operators), added, lab_operator_ids())
    lab_public = LabPublic(request=task.request, capabilities=tuple(task.capabilities),
                           contracts=task.contracts)
    lab_private = LabPrivate(world=world.world, limits=world.limits,
                             expect=criterion.check.expect)
    # Every cell's scenario must hold together (references, a fault on a tool it can act
    # on and the pipeline may call) before anything runs.
    for op, spec in [(None, None), *specs.items()]:
        assert spec is None or isinstance(spec, LabOperatorSpec)
        scenario = cell_scenario(lab_public, lab_private, name="check", seed=0,
                                 fault=spec.fault if spec is not None else None)
        for field, expected, got in reference_problems(scenario):
            head, _, rest = field.partition(".")
            if head == "faults":  # faults.0.tool -> the operator's fault entry
                spec_path, where = ((added[op][0], "spec") if op in added
                                    else (ops_path, f"operators.{op}"))
                raise SabotDataError(spec_path, f"{where}.fault.{rest.partition('.')[2]}",
                                     expected, got)
            if head == "task":
                raise SabotDataError(public_path, f"request.{rest}", expected, got)
            raise SabotDataError(world_path, field, expected, got)
    return PrivateSpec(
        task_id=task_id,
        artifact=task.artifact,
        required_effects=(),
        criterion=criterion.check,
        operators=specs,
        stale_materials={},
        lab=lab_private,
    )
