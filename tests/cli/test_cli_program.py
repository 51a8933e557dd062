"""The ``sabot`` program as a shell runs it: its version, and a reader that closes its
output early (issue 22 items 16 and 19)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_sabot import __version__

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _sabot(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest_sabot", *args]


@pytest.mark.slow
def test_issue22_16_sabot_version_prints_the_package_version() -> None:
    done = subprocess.run(_sabot("--version"), capture_output=True, text=True, env=_env(),
                          timeout=60, check=False)
    assert done.returncode == 0
    assert done.stdout.strip() == f"pytest-sabot {__version__}"


@pytest.mark.slow
def test_issue22_16_pytest_VV_lists_the_plugin_version(tmp_path: Path) -> None:
    """pytest 9 answers a single ``--version`` before loading any plugin (its own line
    only); ``pytest -VV`` lists every plugin with its version, this one among them."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-VV"], capture_output=True,
                          text=True, env=_env(), timeout=60, check=False, cwd=tmp_path)
    assert done.returncode == 0
    assert f"pytest-sabot-{__version__} at " in done.stdout


def test_issue22_16_the_package_version_is_the_distribution_version() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["version"] == __version__


@pytest.mark.slow
def test_issue22_19_sabot_validate_into_a_closed_pipe_exits_with_its_own_code() -> None:
    """The reader is gone before the first byte: every write fails with EPIPE, and the
    command still finishes, exits 0 (validate found nothing wrong) and says nothing."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(_sabot("validate"), stdout=write_end, stderr=subprocess.PIPE,
                              text=True, env=_env(), timeout=120, check=False)
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert "Broken pipe" not in done.stderr
    assert done.stderr == ""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash for pipefail")
def test_issue22_19_sabot_validate_piped_to_head_exits_0() -> None:
    command = f"{sys.executable} -m pytest_sabot validate | head -1"
    done = subprocess.run(["/bin/bash", "-o", "pipefail", "-c", command], capture_output=True,
                          text=True, env=_env(), timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wave 1: ok")
    assert "Broken pipe" not in done.stderr


@pytest.mark.slow
def test_issue22_19_a_failing_validate_keeps_its_exit_code_into_a_closed_pipe(
    tmp_path: Path,
) -> None:
    """A closed pipe never turns a finding into a pass: validate of a root whose cells file
    is broken still exits 2."""
    (tmp_path / "cells").mkdir()
    (tmp_path / "cells" / "wave1.yaml").write_text("wave: [not, a, number]\n", encoding="utf-8")
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(_sabot("validate", str(tmp_path)), stdout=write_end,
                              stderr=subprocess.PIPE, text=True, env=_env(), timeout=120,
                              check=False)
    finally:
        os.close(write_end)
    assert done.returncode == 2, done.stderr
    assert "Broken pipe" not in done.stderr


def test_issue22_18_sabot_history_labels_a_replay_run_replay() -> None:
    from pytest_sabot.history.queries import RunSummary
    from pytest_sabot.history.render import _label

    def summary(model: str, fixture: bool = False, kind: str = "session") -> RunSummary:
        return RunSummary.model_construct(model=model, fixture=fixture, kind=kind)

    assert _label(summary("replay:reports/live/recordings")) == "replay"
    assert _label(summary("openai:gpt-5.6-terra")) == "live"
    assert _label(summary("sim:realistic", fixture=True)) == "fixture"
    assert _label(summary("builtin:naive", kind="lab")) == "lab"


def test_issue22_18_a_standalone_gateway_run_is_labelled_with_that_gateway() -> None:
    from pytest_sabot.results import model_label
    from pytest_sabot.results.build import GATEWAY_UPSTREAM

    label = model_label("openai:gpt-5.6-terra", f"{GATEWAY_UPSTREAM}http://127.0.0.1:40129")
    assert label.startswith("live model openai:gpt-5.6-terra through the standalone gateway "
                            "http://127.0.0.1:40129: its upstream, spend and recordings")

