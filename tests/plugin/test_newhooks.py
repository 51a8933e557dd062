"""pytest-sabot's own hooks (``pytest_sabot/newhooks.py``): another plugin extends
results.json through ``pytest_sabot_results_json``, under ``extensions`` (issue 11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sabot import newhooks
from pytest_sabot.commands.cli import main

pytestmark = pytest.mark.slow  # a pytest session of a real pipeline

ONE_CELL = [
    "--sabot-wave=1", "--sabot-framework=langgraph", "--sabot-config=default",
    "--sabot-task=T1", "--sabot-seed=11", "--sabot-operator=baseline",
]

DASHBOARD = """
def pytest_sabot_results_json(config, results):
    cells = len(results["cells"])
    results["extensions"]["dashboard"] = {"team": "agents", "cells_seen": cells}
    results["wave"] = 99  # not an extension: never written
"""


def _session(pytester: pytest.Pytester, conftest: str) -> tuple[pytest.RunResult, Path]:
    pytester.makeconftest(conftest)
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess(
        *ONE_CELL, f"--sabot-out={out}", "-p", "no:cacheprovider", "-p", "no:randomly"
    )
    return result, out


def test_every_hook_has_a_one_line_docstring() -> None:
    hooks = [getattr(newhooks, n) for n in dir(newhooks) if n.startswith("pytest_sabot_")]
    assert hooks
    for hook in hooks:
        assert hook.__doc__ and hook.__doc__.split("\n")[0].strip()


def test_a_plugin_extends_results_json_and_a_rescore_keeps_it(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    result, out = _session(pytester, DASHBOARD)
    assert result.ret == 0, "\n".join(result.outlines + result.errlines)
    written = json.loads((out / "results.json").read_text())
    assert written["extensions"] == {"dashboard": {"team": "agents", "cells_seen": 1}}
    assert written["wave"] == 1
    assert main(["rescore", str(out)]) == 0
    assert "identical to results.json" in capsys.readouterr().out


def test_a_failing_extension_costs_the_session_nothing(pytester: pytest.Pytester) -> None:
    result, out = _session(
        pytester,
        "def pytest_sabot_results_json(config, results):\n"
        "    results['extensions']['broken'] = object()\n",
    )
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == 0, text
    assert "pytest_sabot_results_json hook failed" in text
    written = json.loads((out / "results.json").read_text())
    assert written["extensions"] == {} and written["cells"]
