"""The layer rules of pyproject.toml ([tool.importlinter]) hold, and a wrong import fails the
suite (issue 11): the same check .ci/run makes with ``lint-imports``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True, text=True,
        timeout=300, env={**os.environ, "PYTHONPATH": str(root)}, check=False,
    )


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


def test_an_upward_import_fails_the_layers_contract(tmp_path: Path) -> None:
    root = _copy_with(tmp_path, "core/records.py", "from pytest_sabot.results import adjudicate")
    done = _lint(root)
    assert done.returncode != 0
    assert "The layers point down" in done.stdout and "BROKEN" in done.stdout
    assert "pytest_sabot.core.records -> pytest_sabot.results.adjudicate" in done.stdout


def test_a_scorer_reaching_for_the_gateway_fails_its_contract(tmp_path: Path) -> None:
    root = _copy_with(tmp_path, "scoring/flags.py", "import httpx")
    done = _lint(root)
    assert done.returncode != 0
    assert "The scorer never imports" in done.stdout and "BROKEN" in done.stdout


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
