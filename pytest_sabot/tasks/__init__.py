"""The five Sabot tasks: public view, private spec, output contract, pass criterion and
the task world (workspace + data/check/write tools)."""

from __future__ import annotations

from pytest_sabot.tasks.contract import check_contract, normalize_artifact
from pytest_sabot.tasks.criteria import evaluate_pass
from pytest_sabot.tasks.loader import (
    TASK_IDS,
    Material,
    PrivateSpec,
    PublicView,
    load_private,
    load_public,
)

__all__ = [
    "TASK_IDS",
    "Material",
    "PrivateSpec",
    "PublicView",
    "check_contract",
    "evaluate_pass",
    "load_private",
    "load_public",
    "normalize_artifact",
]
