"""Helpers for the example tests: a real ``pip install`` of an example package into a
directory of its own (no network: ``--no-deps --no-build-isolation``, the build backend of
the shared environment), a standard root holding an example's candidate matrix, and the
environment that puts both before this checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from pytest_sabot.core.paths import standard_root

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def pip_install(example: Path, target: Path) -> Path:
    """``pip install --target`` of one example package (its dependencies are already
    installed); returns the directory it went into."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--no-build-isolation", "--no-index", "--disable-pip-version-check",
         "--target", str(target), str(example)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return target


def root_with(path: Path, matrix: Path, seeds: Path) -> Path:
    """A standard root: the shipped cells/, tasks/ and mappings/ plus one candidate matrix
    and its seed registry."""
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(standard_root() / folder, path / folder)
    shutil.copy(matrix, path / "cells" / matrix.name)
    shutil.copy(seeds, path / "cells" / "seeds" / seeds.name)
    return path


def env_with(*paths: Path) -> dict[str, str]:
    """The environment of a child process: ``paths``, then this checkout, on the path."""
    given = [str(p) for p in paths] + [str(REPO)]
    rest = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(given + ([rest] if rest else []))}
