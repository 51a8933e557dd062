"""The layer rules of pyproject.toml ([tool.importlinter]) hold, and a wrong import fails the
suite (issue 11): the same check .ci/run makes with ``lint-imports``."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True, text=True,
        timeout=300, env={**os.environ, "PYTHONPATH": str(root)}, check=False,
    )


@pytest.mark.slow
def test_the_import_contracts_hold() -> None:
    done = _lint(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def _copy_with(tmp_path: Path, module: str, line: str) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(REPO / "pytest_sabot", root / "pytest_sabot",
                    ignore=shutil.ignore_patterns("__pycache__", "_standard"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    path = root / "pytest_sabot" / module
    path.write_text(path.read_text() + f"\n{line}\n")
    return root


@pytest.mark.slow
def test_an_upward_import_fails_the_layers_contract(tmp_path: Path) -> None:
    root = _copy_with(tmp_path, "core/records.py", "from pytest_sabot.results import adjudicate")
    done = _lint(root)
    assert done.returncode != 0
    assert "The layers point down" in done.stdout and "BROKEN" in done.stdout
    assert "pytest_sabot.core.records -> pytest_sabot.results.adjudicate" in done.stdout


@pytest.mark.slow
def test_a_scorer_reaching_for_the_gateway_fails_its_contract(tmp_path: Path) -> None:
    root = _copy_with(tmp_path, "scoring/flags.py", "import httpx")
    done = _lint(root)
    assert done.returncode != 0
    assert "The scorer never imports" in done.stdout and "BROKEN" in done.stdout


@pytest.mark.slow
def test_loading_the_plugin_the_commands_the_adapters_and_a_wave_imports_no_framework() -> None:
    """The same rule at run time: the adapters' declarations are read and a wave is loaded
    (its frameworks checked), and still no framework nor pipeline module is imported."""
    code = (
        "import sys, pytest_sabot.plugin, pytest_sabot.commands.cli\n"
        "from pytest_sabot.core.frameworks import adapters, require_frameworks\n"
        "from pytest_sabot.matrix.standard import load_standard\n"
        "require_frameworks(d.name for d in adapters())\n"
        "load_standard(2); load_standard('agent-framework')\n"
        "heavy = ('langgraph', 'langchain', 'crewai', 'autogen', 'agent_framework')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy) or m.endswith('.pipeline')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.strip() == "[]"


def _graph_tool() -> Any:
    path = REPO / "scripts" / "import_graph.py"
    spec = importlib.util.spec_from_file_location("import_graph", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_graph"] = module
    spec.loader.exec_module(module)
    return module


def _contract_layers(root: Path) -> list[list[str]]:
    data = tomllib.loads((root / "pyproject.toml").read_text())
    (layers,) = [c for c in data["tool"]["importlinter"]["contracts"] if c["id"] == "layers"]
    return [[m.strip() for m in re.split(r"[|:]", raw)] for raw in layers["layers"]]


@pytest.mark.slow
def test_the_domain_sub_layers_point_down_and_the_graph_tool_reads_them(tmp_path: Path) -> None:
    """The domain is ordered sub-layers: the embedded model sits under the gateway that
    serves it, so the model reaching up for the gateway breaks the layers contract, and
    scripts/import_graph.py (which reads its layers from pyproject.toml, keeping no copy)
    reports the same arrow and no other."""
    graph = _graph_tool()
    here = graph.measure(REPO)
    assert here["layers"] == _contract_layers(REPO)
    assert ["pytest_sabot.sim"] in here["layers"]
    assert here["upward_imports"] == []
    root = _copy_with(tmp_path, "sim/engine.py", "from pytest_sabot.gateway import settings")
    done = _lint(root)
    assert done.returncode != 0 and "BROKEN" in done.stdout
    assert "pytest_sabot.sim.engine -> pytest_sabot.gateway.settings" in done.stdout
    there = graph.measure(root)
    assert there["upward_imports"] == ["pytest_sabot.sim.engine -> pytest_sabot.gateway.settings"]


def test_the_gateway_imports_the_embedded_model_in_the_open() -> None:
    """The gateway's embedded-model backend imports the model with an import statement the
    contracts see (no importlib by name): the edge is in the checked graph."""
    import grimp

    built = grimp.build_graph("pytest_sabot", cache_dir=None)
    assert built.direct_import_exists(
        importer="pytest_sabot.gateway.backends.sim", imported="pytest_sabot.sim.engine"
    )
    assert "importlib" not in (REPO / "pytest_sabot/gateway/backends/sim.py").read_text()


@pytest.mark.slow
def test_a_new_adapter_is_held_by_the_rules_without_being_named(tmp_path: Path) -> None:
    """No adapter is listed by name: a new adapter package importing its framework outside
    its pipeline breaks the framework rule, and one importing another adapter breaks the
    independence rule, with no edit to pyproject.toml."""
    root = _copy_with(tmp_path, "core/records.py", "")
    new = root / "pytest_sabot" / "adapters" / "newframe"
    new.mkdir()
    (new / "__init__.py").write_text("import crewai\n")
    (new / "pipeline.py").write_text("import crewai\nfrom pytest_sabot.adapters import langgraph\n")
    done = _lint(root)
    assert done.returncode != 0
    out = " ".join(done.stdout.split())
    assert "Nothing imports a framework except its adapter's pipeline" in out
    assert "pytest_sabot.adapters.newframe -> crewai" in out
    assert "pytest_sabot.adapters.newframe.pipeline -> crewai" not in out  # its pipeline may
    assert "Each adapter stands alone" in out and out.count("BROKEN") == 2
    assert "pytest_sabot.adapters.newframe.pipeline -> pytest_sabot.adapters.langgraph" in out


def test_importing_the_session_package_loads_none_of_its_modules() -> None:
    code = (
        "import sys, pytest_sabot.session\n"
        "print(sorted(m for m in sys.modules if m.startswith('pytest_sabot.session.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.strip() == "[]"
