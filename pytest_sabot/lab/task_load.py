"""Reading a lab task (T6) into the two views every task has: the public view a pipeline
may see and the private spec only the scorer and the harness's seams read, each with the
lab half beside it (:class:`~pytest_sabot.lab.task.LabPublicView`,
:class:`~pytest_sabot.lab.task.LabPrivateSpec`).

The file formats are :mod:`pytest_sabot.lab.task`'s; the helpers that read a task
directory are the file tasks' (:mod:`pytest_sabot.tasks.loader`), so both kinds of task
name a bad file, field and expected value alike.
"""

from __future__ import annotations

from pathlib import Path

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.loading import load_yaml_model
from pytest_sabot.core.operators import lab_operator_ids
from pytest_sabot.lab.scenario_load import reference_problems
from pytest_sabot.lab.task import (
    LAB_TASKS,
    LabAddedOperatorFile,
    LabCriterionFile,
    LabOperatorsFile,
    LabOperatorSpec,
    LabPrivate,
    LabPrivateSpec,
    LabPublic,
    LabPublicView,
    LabTaskFile,
    LabWorldFile,
    cell_scenario,
)
from pytest_sabot.tasks.loader import (
    added_specs,
    all_specs,
    read_contract,
    read_materials,
    spec_location,
    task_dir,
)


def load_lab_task_file(task_id: str, root: Path) -> LabTaskFile:
    """Parse and validate a lab task's public/task.yaml (T6)."""
    public = task_dir(task_id, root, LAB_TASKS) / "public"
    path = public / "task.yaml"
    task = load_yaml_model(path, LabTaskFile, top_field="request")
    if task.id != task_id:
        raise SabotDataError(path, "id", f"the directory's task id {task_id!r}", task.id)
    return task


def load_lab_public(task_id: str, root: Path, contract_revision: str) -> LabPublicView:
    """The public view of a lab task: brief, request material, the lab tools and their
    contracts, one contract revision of the report. Reads only tasks/T6/public/."""
    public = task_dir(task_id, root, LAB_TASKS) / "public"
    task_path = public / "task.yaml"
    task = load_lab_task_file(task_id, root)
    materials = read_materials(public, task_path, task.materials)
    first = materials[0].text
    for field, value in task.request.model_dump(mode="json").items():
        if f"{field}: {value}" not in first:
            raise SabotDataError(
                task_path, f"request.{field}",
                f"the value stated in {task.materials[0].file} ('{field}: ...' line)", value,
            )
    contract = read_contract(public, task_path, task.contract_revisions, "contract_revisions",
                             contract_revision, task.artifact)
    return LabPublicView(
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


def load_lab_private(task_id: str, root: Path) -> LabPrivateSpec:
    """The operators' fault entries and ground-truth notes, the world behind the tools and
    the exact counts the gate's completion rules check; every cell's scenario is checked
    to hold together before anything runs."""
    directory = task_dir(task_id, root, LAB_TASKS)
    private = directory / "private"
    public_path = directory / "public" / "task.yaml"
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
    added = added_specs(private, task_id, LabAddedOperatorFile)
    specs: dict[str, LabOperatorSpec] = {}
    for op_id, spec_of in all_specs(ops_path, dict(operators.operators), added,
                                  lab_operator_ids()).items():
        assert isinstance(spec_of, LabOperatorSpec)
        specs[op_id] = spec_of
    lab_public = LabPublic(request=task.request, capabilities=tuple(task.capabilities),
                           contracts=task.contracts)
    lab_private = LabPrivate(world=world.world, limits=world.limits,
                             expect=criterion.check.expect)
    # Every cell's scenario must hold together (references, a fault on a tool it can act
    # on and the pipeline may call) before anything runs.
    checked: list[tuple[str | None, LabOperatorSpec | None]] = [(None, None), *specs.items()]
    for op, spec in checked:
        scenario = cell_scenario(lab_public, lab_private, name="check", seed=0,
                                 fault=spec.fault if spec is not None else None)
        for field, expected, got in reference_problems(scenario):
            head, _, rest = field.partition(".")
            if head == "faults":  # faults.0.tool -> the operator's fault entry
                assert op is not None  # the baseline's scenario carries no fault
                spec_path, where = spec_location(ops_path, added, op)
                raise SabotDataError(spec_path, f"{where}.fault.{rest.partition('.')[2]}",
                                     expected, got)
            if head == "task":
                raise SabotDataError(public_path, f"request.{rest}", expected, got)
            raise SabotDataError(world_path, field, expected, got)
    return LabPrivateSpec(
        task_id=task_id,
        artifact=task.artifact,
        required_effects=(),
        criterion=None,
        operators=specs,
        stale_materials={},
        lab=lab_private,
    )
