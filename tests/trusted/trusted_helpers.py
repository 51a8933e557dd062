"""Helpers for the trusted-agent tests: a user's package on disk and the lab command.

A test writes a small package (``<name>/agent.py``) into its own directory, runs the real
command (``python -m pytest_sabot.lab run ... --trust-local-agent``, through ``main``) from
there, so the child imports the package the way a user's would, and reads the record.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pytest_sabot.commands.lab import main
from pytest_sabot.lab.record import LabRun, read_run
from pytest_sabot.lab.scenario import Scenario
from pytest_sabot.lab.scenario_load import SCENARIO_DIR, parse_scenario


def user_package(root: Path, name: str, source: str) -> str:
    """Write ``root/name/agent.py`` (and an empty ``__init__``); returns the package name.
    ``@WORKDIR@`` in the source is ``root`` (the child runs in a fresh directory of its own,
    so a file it leaves for the test needs a full path)."""
    package = root / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "agent.py").write_text(textwrap.dedent(source).replace("@WORKDIR@", str(root)))
    return name


def scenario_data(name: str = "lost-create-response") -> dict[str, Any]:
    data = yaml.safe_load((SCENARIO_DIR / "helpdesk" / f"{name}.yaml").read_text())
    assert isinstance(data, dict)
    return data


def scenario_file(root: Path, file_name: str,
                  edit: Callable[[dict[str, Any]], None] | None = None,
                  base: str = "lost-create-response") -> Path:
    """A shipped scenario, optionally edited, written as ``root/scenarios/file_name``."""
    data = scenario_data(base)
    if edit is not None:
        edit(data)
    path = root / "scenarios" / file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def parsed(path: Path) -> Scenario:
    return parse_scenario(yaml.safe_load(path.read_text()), str(path))


def run_trusted(scenario: str | Path, target: str, out: Path, *extra: str) -> (
        tuple[int, LabRun | None]):
    """The lab command with --trust-local-agent; its exit code and the record, if any."""
    code = main(["run", str(scenario), "--agent", target, "--trust-local-agent",
                 "--out", str(out), *extra])
    record = read_run(out) if (out / "run.json").exists() else None
    return code, record
