"""What the plugin costs a project that has it installed: pytest imports it on every run.

Importing ``pytest_sabot.plugin`` loads the contracts (``core``) and the session object
(``session``) only; no lab, no framework, no gateway server, no report module. A run
without ``--sabot-wave`` stays that small to its end: the rest is imported inside the
hooks of a wave, the way hypothesis imports its engine. Each check runs in a fresh
interpreter, so nothing another test imported is counted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# What a plain import or a run without a wave may load: the package, its hook module and
# hook specs, the contracts and the session object.
ALLOWED = ("pytest_sabot.core", "pytest_sabot.session")
ALLOWED_MODULES = {"pytest_sabot", "pytest_sabot.plugin", "pytest_sabot.newhooks"}
# What it must never load (by package), and the third-party packages a wave brings in.
FORBIDDEN = (
    "pytest_sabot.lab", "pytest_sabot.adapters", "pytest_sabot.gateway", "pytest_sabot.report",
    "pytest_sabot.results", "pytest_sabot.harness", "pytest_sabot.matrix",
    "pytest_sabot.commands", "pytest_sabot.history", "pytest_sabot.trusted",
)
THIRD_PARTY = ("langgraph", "crewai", "autogen_agentchat", "agent_framework", "mcp",
               "uvicorn", "starlette", "openai", "rich", "jinja2")

REPORT = """
import json, sys
ours = sorted(m for m in sys.modules if m == "pytest_sabot" or m.startswith("pytest_sabot."))
theirs = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[2:]))
with open(sys.argv[1], "w", encoding="utf-8") as f:
    json.dump({"ours": ours, "theirs": theirs}, f)
"""


def _loaded(code: str, out: Path, cwd: Path) -> dict[str, list[str]]:
    script = code + REPORT
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(out), *THIRD_PARTY],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, list[str]] = json.loads(out.read_text(encoding="utf-8"))
    return loaded


def _check(loaded: dict[str, list[str]]) -> None:
    ours = loaded["ours"]
    assert "pytest_sabot.plugin" in ours
    forbidden = [m for m in ours if m.startswith(FORBIDDEN)]
    assert forbidden == [], f"loaded on import: {forbidden}"
    assert loaded["theirs"] == [], f"third-party packages loaded: {loaded['theirs']}"
    others = [m for m in ours if m not in ALLOWED_MODULES and not m.startswith(ALLOWED)]
    assert others == [], f"loaded beyond the contracts and the session: {others}"
    # Printed with -s, for the record of what the plugin costs (82 of 260 modules before
    # the lab's command line moved up and the session imported the matrix lazily).
    print(f"pytest_sabot modules loaded: {len(ours)}")


@pytest.mark.slow
def test_23_1_importing_the_plugin_loads_no_lab_framework_gateway_or_report(
    tmp_path: Path,
) -> None:
    _check(_loaded("import pytest_sabot.plugin\n", tmp_path / "loaded.json", tmp_path))


@pytest.mark.slow  # a whole pytest session in a fresh interpreter (several seconds)
def test_23_1_a_run_without_a_wave_loads_no_more_than_the_import(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    code = (
        "import pytest, sys\n"
        "rc = pytest.main(['-q', '-p', 'no:cacheprovider', 'test_plain.py'])\n"
        "assert rc == 0, rc\n"
    )
    loaded = _loaded(code, tmp_path / "loaded.json", project)
    _check(loaded)
