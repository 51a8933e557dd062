"""Measure pytest-sabot's import graph: cycles, imports that point up the layers, and the
modules left at the package root.

    python scripts/import_graph.py [REPO_ROOT] [--json]

Every ``import`` / ``from ... import`` of a ``pytest_sabot`` module is an edge, whether it
runs when the module is imported (``eager``) or later inside a function (``lazy``); an
import under ``if TYPE_CHECKING:`` is not an edge. The layers are read from the layers
contract of REPO_ROOT's pyproject.toml ([tool.importlinter], the one ``lint-imports``
checks), with its ignored imports: this script keeps no copy of its own, so it cannot
report an arrow the contract allows. A module in no layer (the package's own
``__init__`` and ``__main__``) is not measured against the layers, as import-linter does.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "pytest_sabot"


@dataclass(frozen=True)
class Layers:
    """The layers contract: members of each layer, highest first, and the ignored imports."""

    members: tuple[tuple[str, ...], ...]
    independent: tuple[bool, ...]
    ignored: tuple[re.Pattern[str], ...]

    def member(self, module: str) -> str | None:
        """The layer member (a package) a module belongs to: its longest listed prefix."""
        found = [m for layer in self.members for m in layer
                 if module == m or module.startswith(m + ".")]
        return max(found, key=len) if found else None

    def rank(self, module: str) -> int | None:
        """The layer of a module (0 = highest); None when it is in no layer."""
        member = self.member(module)
        if member is None:
            return None
        return next(i for i, layer in enumerate(self.members) if member in layer)

    def is_ignored(self, importer: str, imported: str) -> bool:
        return any(p.fullmatch(f"{importer} -> {imported}") for p in self.ignored)


def _expression(text: str) -> re.Pattern[str]:
    """An import-linter import expression ('a.*.b -> c.**') as a pattern."""
    parts = []
    for side in text.split("->"):
        dotted = re.escape(side.strip()).replace(r"\*\*", "[^ ]+").replace(r"\*", "[^. ]+")
        parts.append(dotted)
    return re.compile(" -> ".join(parts))


def read_layers(repo: Path) -> Layers:
    """The layers contract of ``repo``'s pyproject.toml (type ``layers``, the first one)."""
    path = repo / "pyproject.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    contracts = data.get("tool", {}).get("importlinter", {}).get("contracts", [])
    for contract in contracts:
        if contract.get("type") != "layers":
            continue
        members: list[tuple[str, ...]] = []
        independent: list[bool] = []
        for raw in contract["layers"]:
            delimiter = "|" if "|" in raw else ":"
            members.append(tuple(m.strip() for m in raw.split(delimiter)))
            independent.append(delimiter == "|" or ":" not in raw)
        ignored = tuple(_expression(e) for e in contract.get("ignore_imports", []))
        return Layers(tuple(members), tuple(independent), ignored)
    raise SystemExit(f"{path}: no [[tool.importlinter.contracts]] of type 'layers'")


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


def upward(graph: dict[str, set[str]], layers: Layers) -> list[tuple[str, str]]:
    """Imports the layers contract forbids: to a higher layer, or between two siblings of a
    layer of independent siblings ("|"); the contract's ignored imports left out."""

    def forbidden(a: str, b: str) -> bool:
        ra, rb = layers.rank(a), layers.rank(b)
        if ra is None or rb is None or layers.is_ignored(a, b):
            return False
        if rb < ra:
            return True
        return rb == ra and layers.independent[ra] and layers.member(a) != layers.member(b)

    return sorted((a, b) for a, targets in graph.items() for b in targets if forbidden(a, b))


def measure(repo: Path) -> dict[str, object]:
    every, eager = edges(repo)
    known = modules(repo)
    layers = read_layers(repo)
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
        "layers": [list(layer) for layer in layers.members],
        "upward_imports": [f"{a} -> {b}" for a, b in upward(every, layers)],
        "upward_imports_eager": count(upward(eager, layers)),
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
