"""Rules the test suite keeps about itself."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGE = "pytest_sabot"


def _imports_the_package(node: ast.AST) -> bool:
    for child in ast.walk(node):
        if isinstance(child, ast.Import) and any(a.name.startswith(PACKAGE) for a in child.names):
            return True
        if isinstance(child, ast.ImportFrom) and (child.module or "").startswith(PACKAGE):
            return True
        if isinstance(child, ast.Call) and child.args and (
            ast.unparse(child.func).rpartition(".")[2] in ("import_module", "__import__")
        ):
            first = child.args[0]
            if not isinstance(first, ast.Constant) or str(first.value).startswith(PACKAGE):
                return True  # import_module("pytest_sabot...") or of a name not written out
    return False


def _skips_on_import_error(path: Path, base: Path = TESTS) -> list[str]:
    """Places in a test file where a failing import of the package would become a skip:
    ``pytest.importorskip("pytest_sabot...")`` or an ``except ImportError`` around an import
    of the package."""
    found: list[str] = []
    text = path.read_text(encoding="utf-8")
    if "importorskip" not in text and "ImportError" not in text:
        return found
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "importorskip"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).startswith(PACKAGE)
        ):
            found.append(f"{path.relative_to(base)}:{node.lineno} importorskip")
        if isinstance(node, ast.Try):
            caught = {
                ast.unparse(h.type) for h in node.handlers if h.type is not None
            }
            if caught & {"ImportError", "ModuleNotFoundError"} and any(
                _imports_the_package(stmt) for stmt in node.body
            ):
                found.append(f"{path.relative_to(base)}:{node.lineno} except ImportError")
    return sorted(found, key=lambda place: int(place.split(":")[1].split()[0]))


def test_a_broken_import_of_the_package_fails_and_never_skips() -> None:
    """A test may skip when an optional third-party package is absent (a framework, the
    browser driver), never when a module of pytest-sabot fails to import: that is a bug
    the suite must report."""
    found = [place for path in sorted(TESTS.rglob("*.py"))
             for place in _skips_on_import_error(path)]
    assert found == []


def test_the_skip_rule_sees_both_ways_of_hiding_a_broken_import(tmp_path: Path) -> None:
    sample = tmp_path / "_sample_skip_rule.py"
    sample.write_text(
        "import pytest\n"
        "pytest.importorskip('pytest_sabot.sim.engine')\n"
        "try:\n    from pytest_sabot.adapters.crewai import pipeline\n"
        "except ImportError:\n    pipeline = None\n"
        "pytest.importorskip('crewai')\n"
        "def load(module):\n    try:\n        importlib.import_module(module)\n"
        "    except ImportError as exc:\n        return str(exc)\n"
        "try:\n    import playwright\nexcept ImportError:\n    playwright = None\n"
    )
    found = _skips_on_import_error(sample, tmp_path)
    assert found == [
        "_sample_skip_rule.py:2 importorskip",
        "_sample_skip_rule.py:3 except ImportError",
        "_sample_skip_rule.py:9 except ImportError",
    ]
