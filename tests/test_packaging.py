"""The installed package carries the standard: `pip install pytest-sabot` alone is enough to
run a wave, and an installed copy finds its own cells/, tasks/ and mappings/."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(REPO)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    (built,) = out.glob("pytest_sabot-*.whl")
    return built


@pytest.mark.slow
def test_wheel_ships_every_file_of_the_standard(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("cells", "tasks", "mappings"):
        files = [p for p in (REPO / folder).rglob("*") if p.is_file()
                 and "__pycache__" not in p.parts]
        assert files, folder
        for path in files:
            assert f"pytest_sabot/_standard/{path.relative_to(REPO)}" in names, path


@pytest.mark.slow
def test_wheel_registers_the_plugin_and_the_command(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    (entry,) = [n for n in archive.namelist() if n.endswith("entry_points.txt")]
    text = archive.read(entry).decode()
    assert "[pytest11]" in text and "sabot = pytest_sabot.plugin" in text
    assert "sabot = pytest_sabot.commands.cli:main" in text
    assert "[pytest_sabot.adapters]" in text
    assert "langgraph = pytest_sabot.adapters.langgraph:adapter" in text


@pytest.mark.slow
def test_an_installed_copy_finds_its_own_standard(wheel: Path, tmp_path: Path) -> None:
    zipfile.ZipFile(wheel).extractall(tmp_path)
    probe = (
        "from pytest_sabot.core.paths import standard_root; "
        "from pytest_sabot.matrix.cells import load_wave; "
        "from pytest_sabot.core.frameworks import ADAPTERS; "
        "root = standard_root(); print(root); print(len(load_wave(1, root)[1])); "
        "print(sorted({ADAPTERS.entry(n).origin for n in ADAPTERS.names()}))"
    )
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    root, cells, origins = done.stdout.split("\n", 2)
    assert Path(root) == tmp_path / "pytest_sabot" / "_standard"
    assert cells == "1050"
    # The installed copy finds its adapters through its own entry points (no fallback).
    assert origins.strip() == "['entry point of pytest-sabot']"
