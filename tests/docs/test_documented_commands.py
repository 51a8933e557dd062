"""Issue 22 item 18: every command README.md and docs/*.md give runs as they say, so the
docs and the tool cannot drift apart.

Each documented command has an entry in documented_commands.py (the table says how it is
run, or why it is only shown). The fast test checks that the table and the pages hold the
same commands; the slow tests run each page's commands in order, in a scratch copy of the
project, and check each one's exit code and first line of output."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from doc_commands import PAGES, ROOT, commands_of
from documented_commands import TABLE, Run
from filelock import FileLock

COMMAND_TIMEOUT_S = 600


def test_issue22_18_every_documented_command_has_an_entry_and_every_entry_is_documented() -> None:
    for page in PAGES:
        documented = commands_of(page)
        entries = TABLE.get(page, {})
        missing = [c for c in documented if c not in entries]
        stale = [c for c in entries if c not in documented]
        assert not missing, f"{page}: documented commands without an entry: {missing}"
        assert not stale, f"{page}: entries no longer on the page: {stale}"
    assert set(TABLE) <= set(PAGES)


def _environment(workspace: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "SABOT_")) and not k.endswith("_API_KEY")}
    # site/: where the page's own pip install of the example adapter goes (ADAPTERS.md)
    given = (str(workspace / "site"), str(ROOT), env.get("PYTHONPATH", ""))
    env["PYTHONPATH"] = os.pathsep.join(p for p in given if p)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["COLUMNS"] = "80"
    env["HOME"] = str(workspace / "home")
    return env


def _workspace(where: Path) -> Path:
    """A scratch copy of the project: its standard, examples, campaigns and ignore file."""
    project = where / "project"
    project.mkdir()
    for part in ("cells", "tasks", "mappings", "examples", "campaigns"):
        shutil.copytree(ROOT / part, project / part)
    for part in ("constraints.txt", ".gitignore", "pyproject.toml"):
        shutil.copy(ROOT / part, project / part)
    (project / "reports").mkdir()
    (project / "home").mkdir()
    return project


def _run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=COMMAND_TIMEOUT_S, stdin=subprocess.DEVNULL,
                          check=False)


def first_line(stdout: str, stderr: str) -> str:
    """The first line of output that is not blank: stdout's, else stderr's."""
    for text in (stdout, stderr):
        for line in text.splitlines():
            if line.strip():
                return line.rstrip()
    return ""


def _once(command: str, entry: Run, project: Path, env: dict[str, str],
          shared: Path) -> tuple[int, str, str]:
    """A command whose outcome is the same in every scratch project (``Run.once``): run once
    per test session, in a scratch project of its own; what it printed is read back and
    the paths it wrote are copied into ``project``."""
    key = hashlib.sha256(command.encode()).hexdigest()[:16]
    home = shared / key
    home.mkdir(parents=True, exist_ok=True)
    record = home / "done.json"
    with FileLock(home / "lock"):
        if not record.is_file():
            scratch = _workspace(home)
            done = _run(command, scratch, _environment(scratch))
            record.write_text(json.dumps([done.returncode, done.stdout, done.stderr]))
        code, out, err = json.loads(record.read_text())
    for path in entry.once or ():
        source = home / "project" / path
        if source.is_dir():
            shutil.copytree(source, project / path, dirs_exist_ok=True)
    return code, out, err


def run_page(page: str, where: Path, shared: Path | None = None) -> list[str]:
    """Run a page's commands in order; the problems found (empty when every one held)."""
    project = _workspace(where)
    env = _environment(project)
    problems: list[str] = []
    ran: set[str] = set()
    for command in commands_of(page):
        entry = TABLE[page][command]
        if not isinstance(entry, Run) or command in ran:  # a command given twice runs once
            continue
        ran.add(command)
        for step in entry.prepare:
            _run(step, project, env)
        run = entry.command(command)
        if entry.once is not None and shared is not None:
            code, out, err = _once(run, entry, project, env, shared)
        else:
            done = _run(run, project, env)
            code, out, err = done.returncode, done.stdout, done.stderr
        codes = entry.exit if isinstance(entry.exit, tuple) else (entry.exit,)
        line = first_line(out, err)
        if code not in codes or not re.search(entry.first, line):
            problems.append(
                f"{command!r} (ran {run!r}): exit {code} (expected {codes}), first line "
                f"{line!r} (expected /{entry.first}/)\n{out[-1500:]}\n{err[-1500:]}"
            )
    return problems


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if p in TABLE])
def test_issue22_18_each_documented_command_runs_as_documented(
    page: str, tmp_path: Path, pytestconfig: pytest.Config,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if hasattr(pytestconfig, "workerinput") else base) / "docs-once"
    problems = run_page(page, tmp_path, shared)
    assert not problems, "\n\n".join(problems)
