"""The import rule of a Python artifact (T3): which top-level packages a module imports
that its contract does not allow. Shared by the contract checker (tasks/) and the embedded
model's own reading of the contract (sim/), so the two can never disagree."""

from __future__ import annotations

import ast
from collections.abc import Set


def disallowed_imports(tree: ast.AST, allowed: Set[str]) -> list[str]:
    """One problem per ``import`` or ``from ... import`` of a package not in ``allowed``
    (by its top-level name), in the order they stand in the module."""
    out: list[str] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [(node.module or "").split(".")[0]]
        out += [f"import of {n!r} is not allowed" for n in names if n not in allowed]
    return out
