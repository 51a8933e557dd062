"""Measure pytest-sabot's import graph: cycles, imports that point up the layers, and the
modules left at the package root.

    python scripts/import_graph.py [REPO_ROOT] [--json]

Every ``import`` / ``from ... import`` of a ``pytest_sabot`` module is an edge, whether it
runs when the module is imported (``eager``) or later inside a function (``lazy``); an
import under ``if TYPE_CHECKING:`` is not an edge. Layers are those of the import-linter
contracts in pyproject.toml, read from the first matching prefix below; a module of the
layout before the layers were enforced is placed where it moved to, so the same script
measures both layouts.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterable
from pathlib import Path

PACKAGE = "pytest_sabot"

# Highest layer first. Prefix -> layer; the longest matching prefix wins.
LAYERS: tuple[str, ...] = (
    "entry",  # plugin, newhooks, the sabot commands
    "session",
    "report",
    "results",
    "harness",
    "adapters",
    "domain",  # scoring, judge, gateway, operators, tasks, sim, lab, trusted, matrix
    "core",
)
PLACE: dict[str, str] = {
    # the layout with layers
    "plugin": "entry",
    "newhooks": "entry",
    "sabot_cells": "entry",
    "commands": "entry",
    "schema": "entry",
    "session": "session",
    "report": "report",
    "results": "results",
    "harness": "harness",
    "adapters": "adapters",
    "scoring": "domain",
    "judge": "domain",
    "gateway": "domain",
    "operators": "domain",
    "tasks": "domain",
    "sim": "domain",
    "lab": "domain",
    "trusted": "domain",
    "matrix": "domain",
    "core": "core",
    "": "core",  # pytest_sabot/__init__.py (the version)
    # the loose modules at the root of the layout before, placed where they moved (a module
    # inside a package counts in its package's layer)
    "cli": "entry",
    "demo": "entry",
    "plan": "entry",
    "anchor_rates": "entry",
    "runner": "session",
    "options": "session",
    "adjudicate": "results",
    "compare": "results",
    "cells": "domain",
    "standard": "domain",
    "pins": "core",
    "errors": "core",
    "paths": "core",
    "records": "core",
    "trace_io": "core",
    "verdict_token": "core",
    "models": "core",
}


def modules(repo: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package __init__)."""
    found: dict[str, tuple[Path, bool]] = {}
    for path in sorted((repo / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(repo).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_pkg)
    return found


def _resolve(name: str, known: dict[str, tuple[Path, bool]]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def edges(repo: Path) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(every edge, eager edges only) between pytest_sabot modules."""
    known = modules(repo)
    every: dict[str, set[str]] = {m: set() for m in known}
    eager: dict[str, set[str]] = {m: set() for m in known}
    for name, (path, is_pkg) in known.items():
        base = name if is_pkg else name.rpartition(".")[0]

        def visit(node: ast.AST, lazy: bool, name: str = name, base: str = base) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                    visit(child, True)
                    continue
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    for stmt in child.orelse:
                        visit(stmt, lazy)
                    continue
                targets: list[str] = []
                if isinstance(child, ast.Import):
                    targets = [a.name for a in child.names]
                elif isinstance(child, ast.ImportFrom):
                    if child.level:
                        parts = base.split(".")
                        parts = parts[: len(parts) - (child.level - 1)]
                        prefix = ".".join([*parts, *([child.module] if child.module else [])])
                    else:
                        prefix = child.module or ""
                    targets = [f"{prefix}.{a.name}" for a in child.names] or [prefix]
                for target in targets:
                    if not target.startswith(PACKAGE):
                        continue
                    resolved = _resolve(target, known)
                    if resolved and resolved != name:
                        every[name].add(resolved)
                        if not lazy:
                            eager[name].add(resolved)
                visit(child, lazy)

        visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return every, eager


def layer_of(module: str) -> str:
    """The layer of a module: the place of its longest listed prefix."""
    rel = module[len(PACKAGE) :].lstrip(".")
    matches = [p for p in PLACE if p and (rel == p or rel.startswith(p + "."))]
    return PLACE[max(matches, key=len)] if matches else PLACE[""]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(found)


def top_package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for a, targets in graph.items():
        for b in targets:
            if top_package(a) != top_package(b):
                out.setdefault(top_package(a), set()).add(top_package(b))
    return out


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    rank = {name: i for i, name in enumerate(LAYERS)}  # 0 = highest
    return sorted(
        (a, b)
        for a, targets in graph.items()
        for b in targets
        if rank[layer_of(b)] < rank[layer_of(a)]
    )


def measure(repo: Path) -> dict[str, object]:
    every, eager = edges(repo)
    known = modules(repo)
    root = sorted(
        m.rpartition(".")[2] + ".py"
        for m, (_, is_pkg) in known.items()
        if m.count(".") == 1 and not is_pkg
    )

    def count(pairs: Iterable[object]) -> int:
        return len(list(pairs))

    return {
        "modules": len(known),
        "edges": sum(len(t) for t in every.values()),
        "root_modules": root,
        "module_cycles": cycles(every),
        "module_cycles_eager": cycles(eager),
        "package_cycles": cycles(package_graph(every)),
        "package_cycles_eager": cycles(package_graph(eager)),
        "upward_imports": [f"{a} -> {b}" for a, b in upward(every)],
        "upward_imports_eager": count(upward(eager)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", nargs="?", type=Path, default=Path(__file__).parent.parent)
    parser.add_argument("--json", action="store_true", help="print the whole measurement")
    args = parser.parse_args(argv)
    result = measure(args.repo)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"modules: {result['modules']}, import edges: {result['edges']}")
    root = result["root_modules"]
    assert isinstance(root, list)
    print(f"modules at the package root: {len(root)} ({', '.join(root)})")
    for key in ("module_cycles", "module_cycles_eager", "package_cycles", "package_cycles_eager"):
        found = result[key]
        assert isinstance(found, list)
        print(f"{key.replace('_', ' ')}: {len(found)}")
        for group in found:
            print("   " + " <-> ".join(group))
    ups = result["upward_imports"]
    assert isinstance(ups, list)
    print(f"upward imports: {len(ups)} ({result['upward_imports_eager']} at import time)")
    for line in ups:
        print("   " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
