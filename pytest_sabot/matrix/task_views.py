"""The two views of any task a matrix registers: the public view (what a pipeline may
see) and the private spec (what only the scorer and the harness's seams read).

A file task (T1..T5) is read by :mod:`pytest_sabot.tasks.loader`; a lab task (T6) by
:mod:`pytest_sabot.lab.task_load`, into the same two views with the lab half beside them.
The lab's task models are imported only to read a lab task: a matrix of file tasks (every
wave of the standard) never builds them.
"""

from __future__ import annotations

from pathlib import Path

from pytest_sabot.core.models.cells import LAB_TASKS
from pytest_sabot.tasks.loader import TASK_IDS as FILE_TASKS
from pytest_sabot.tasks.loader import PrivateSpec, PublicView, task_dir
from pytest_sabot.tasks.loader import load_private as load_file_private
from pytest_sabot.tasks.loader import load_public as load_file_public

__all__ = ["TASK_IDS", "load_private", "load_public"]

TASK_IDS: tuple[str, ...] = (*FILE_TASKS, *LAB_TASKS)
"""Every task: the file tasks, then the lab's."""


def load_public(task_id: str, root: Path, contract_revision: str) -> PublicView:
    """The public view of any task for one contract revision (a lab task's is a
    :class:`~pytest_sabot.lab.task.LabPublicView`)."""
    task_dir(task_id, root, TASK_IDS)
    if task_id in LAB_TASKS:
        from pytest_sabot.lab.task_load import load_lab_public

        return load_lab_public(task_id, root, contract_revision)
    return load_file_public(task_id, root, contract_revision)


def load_private(task_id: str, root: Path) -> PrivateSpec:
    """The private spec of any task (a lab task's is a
    :class:`~pytest_sabot.lab.task.LabPrivateSpec`)."""
    task_dir(task_id, root, TASK_IDS)
    if task_id in LAB_TASKS:
        from pytest_sabot.lab.task_load import load_lab_private

        return load_lab_private(task_id, root)
    return load_file_private(task_id, root)
