"""Issue 9.7: the CI recipe is a real workflow file, and it runs the documented commands.

examples/ci/sabot-row.yml is parsed as YAML; its ``run:`` commands must be exactly the
commands docs/USAGE.md documents for a maintainer's row, its pytest command must be a
valid selection of one framework's row, and what it uploads must be what that command
writes.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "examples" / "ci" / "sabot-row.yml"
USAGE = REPO / "docs" / "USAGE.md"


def _workflow() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return data


def _steps() -> list[dict[str, Any]]:
    (job,) = _workflow()["jobs"].values()
    steps: list[dict[str, Any]] = job["steps"]
    return steps


def _documented() -> list[str]:
    text = USAGE.read_text(encoding="utf-8")
    block = re.search(r"<!-- ci-commands -->\s*```bash\n(.*?)```\s*<!-- /ci-commands -->", text,
                      re.S)
    assert block is not None, "docs/USAGE.md has no ci-commands block"
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


def _option(args: list[str], name: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in args if a.startswith(f"{name}=")]
    return value


def test_9_7_the_workflow_runs_exactly_the_documented_commands() -> None:
    runs = [step["run"].strip() for step in _steps() if "run" in step]
    assert runs == _documented()
    # the install line is the one README's first command uses
    assert runs[0] in (REPO / "README.md").read_text(encoding="utf-8")


def test_9_7_the_workflow_is_a_github_actions_job_on_the_supported_python() -> None:
    data = _workflow()
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads a bare 'on' as true
    assert {"push", "pull_request"} <= set(triggers)
    uses = [step.get("uses", "") for step in _steps()]
    assert any(u.startswith("actions/checkout@") for u in uses)
    (setup,) = [s for s in _steps() if s.get("uses", "").startswith("actions/setup-python@")]
    assert setup["with"]["python-version"] == "3.11"  # pyproject: requires-python >= 3.11


def test_9_7_the_workflow_uploads_what_its_commands_write() -> None:
    (command,) = [s["run"] for s in _steps() if s.get("run", "").startswith("pytest ")]
    args = shlex.split(command)
    junit, out = _option(args, "--junitxml"), _option(args, "--sabot-out")
    (upload,) = [s for s in _steps() if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload.get("if") == "always()"  # a failing gate still leaves its evidence
    paths = upload["with"]["path"].split()
    assert junit in paths
    assert f"{out}/results.json" in paths and f"{out}/RESULTS.md" in paths
    (report,) = [s["run"] for s in _steps() if s.get("run", "").startswith("sabot report")]
    assert shlex.split(report)[-1] == out


@pytest.mark.slow
def test_9_7_the_workflow_command_selects_one_frameworks_row(
    pytester: pytest.Pytester,
) -> None:
    (command,) = [s["run"] for s in _steps() if s.get("run", "").startswith("pytest ")]
    args = [a for a in shlex.split(command)[1:] if a not in ("-n", "auto")]
    out = pytester.path / "never"
    args = [a if not a.startswith("--sabot-out=") else f"--sabot-out={out}" for a in args]
    result = pytester.runpytest(*args, "--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.ret == 0, "\n".join(result.outlines + result.errlines)
    cells = [line for line in result.outlines if "test_cell[" in line]
    # LangGraph, both configs, wave 3: 6 operators x 5 tasks x 5 seeds + 25 baselines each
    assert len(cells) == 2 * (6 * 5 * 5 + 25)
    assert all("langgraph-" in line for line in cells)
    assert not out.exists()  # collecting writes nothing
