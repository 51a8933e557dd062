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
