"""The published-defect registry of a standard root (cells/published-defects.yaml,
models in core/models/defects.py): which disclosed defect of a published instrument a wave
reproduces, and which registry file a wave's registration hash leaves out."""

from __future__ import annotations

from pathlib import Path

from pytest_sabot.core.loading import load_yaml_model
from pytest_sabot.core.models.defects import PublishedDefect, PublishedDefects

DEFECTS_FILE = "published-defects.yaml"


def defects_path(root: Path) -> Path:
    return Path(root) / "cells" / DEFECTS_FILE


def load_published_defects(root: Path) -> PublishedDefects:
    """The root's registry (an empty one when the root has no such file); a malformed file
    is a SabotDataError naming the file and the field."""
    path = defects_path(root)
    if not path.is_file():
        return PublishedDefects(registered="", defects=[])
    return load_yaml_model(path, PublishedDefects, top_field="defects")


def defects_for(root: Path, wave: int) -> list[PublishedDefect]:
    """The defects wave ``wave`` of this root reproduces."""
    return load_published_defects(root).for_wave(wave)


def serves_ground_truth(root: Path, wave: int, task: str) -> bool:
    """Whether runs of ``task`` in wave ``wave`` are served the task's ground-truth notes."""
    return any(d.task == task and d.serves == "ground_truth_notes"
               for d in defects_for(root, wave))


def unregistered_defect_files(root: Path, wave: int) -> list[Path]:
    """The registry file when it names no defect of ``wave``: left out of that wave's
    registration hash, so a defect registered for other waves moves only their hash."""
    path = defects_path(root)
    if path.is_file() and not defects_for(root, wave):
        return [path]
    return []
