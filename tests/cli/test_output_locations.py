"""Where runs put what they create (issue 22 item 14): the run history lives in the output
root, never in the working directory, and the shipped .gitignore covers everything an
ordinary run writes, so ``git status`` stays clean."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_sabot.history.store import default_history_path, history_for_tree

ROOT = Path(__file__).resolve().parents[2]
BASELINE = "langgraph-default-baseline-T1-s11"


def test_issue22_14_an_output_directory_in_the_working_directory_records_into_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_history_path(Path("shard-2")) == tmp_path / "reports" / "history.sqlite"
    assert default_history_path(Path("reports/wave-3")) == tmp_path / "reports" / "history.sqlite"
    assert default_history_path(tmp_path / "runs" / "a") == tmp_path / "runs" / "history.sqlite"
    assert history_for_tree(tmp_path) == tmp_path / "reports" / "history.sqlite"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert history_for_tree(elsewhere) == elsewhere / "history.sqlite"


def _session(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SABOT_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "pytest", "-p", "no:randomly", "--sabot-wave=1",
               f"::test_cell[{BASELINE}]", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, check=False)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_issue22_14_ordinary_runs_leave_git_status_clean_and_the_root_without_a_history(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / ".gitignore", project / ".gitignore")
    (project / "reports").mkdir()
    shutil.copy(ROOT / "reports" / "README.md", project / "reports" / "README.md")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")

    wave = _session(project)  # the default output: reports/wave-1, the cache on
    assert wave.returncode == 0, wave.stdout[-3000:]
    assert (project / "reports" / "wave-1" / "results.json").is_file()
    shard = _session(project, "--sabot-out=shard-1")  # a directory in the working directory
    assert shard.returncode == 0, shard.stdout[-3000:]

    assert not (project / "history.sqlite").exists()
    assert not list(project.glob("history.sqlite*"))
    history = project / "reports" / "history.sqlite"
    assert history.is_file()
    assert f"in {history}" in shard.stdout
    status = _git(project, "status", "--porcelain").splitlines()
    assert status == ["?? shard-1/"], status  # only the directory the user named
