"""Issue 22 item 12 (SPEC I96): in a live session with workers, every output reports each
cell's final verdict: the pytest count line and the JUnit XML say what results.json, the
scoreboard and ``sabot export`` say.

The session runs two cells on one xdist worker against a loopback provider: a plugin of
the session's own orders the fault cell before its baseline (as pytest-randomly or any
reordering plugin may), so the fault cell is scored while its baseline is still pending
(a provisional verdict). Then the provider goes down for the baseline's calls, which ends
the baseline as a RUN_ERROR, and the fault cell's final verdict is BASELINE_FAIL.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from live_provider import FakeProvider
from live_sessions import MODEL, SELECTION, clean_env, run_session

from pytest_sabot.commands.cli import main
from pytest_sabot.results.outcomes import outcome_of

pytestmark = pytest.mark.slow

FAULT = "langgraph-default-O1-T1-s11"
BASELINE = "langgraph-default-baseline-T1-s11"

REORDER = '''
import os
import pathlib


def pytest_collection_modifyitems(items):
    """The fault cell before its baseline (the same order on every worker)."""
    items.sort(key=lambda item: "baseline" in item.nodeid)


def pytest_runtest_setup(item):
    """The provider goes down as the baseline starts."""
    if "baseline" in item.nodeid:
        pathlib.Path(os.environ["SABOT_TEST_OUTAGE"]).touch()
'''


class OutageProvider(FakeProvider):
    """The loopback provider, down (a 400 to every call) once the flag file exists."""

    def __init__(self, api_key: str, flag: Path) -> None:
        super().__init__(api_key, persona="vigilant", seed=11)
        self.flag = flag

    def _decide(
        self, path: str, authorization: str, body: Any, model: str
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        if self.flag.exists():
            return 400, {"error": {"message": "the service is down", "type":
                                   "invalid_request_error", "param": None,
                                   "code": "service_down"}}, {}
        return super()._decide(path, authorization, body, model)


def _junit_fields(path: Path, family_props: bool) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        match = re.fullmatch(r"(?:test_cell\[)?([^\]]+)\]?", name)
        if match is None or not case.get("classname", "").startswith("sabot.wave"):
            continue
        pairs: dict[str, str] = {}
        if family_props:
            for prop in case.iter("property"):
                pairs[prop.get("name", "")] = prop.get("value", "")
        for out in case.iter("system-out"):
            for line in (out.text or "").splitlines():
                key, _, value = line.partition("=")
                if key.startswith("sabot."):
                    pairs[key] = value
        found[match.group(1)] = pairs
    return found


def test_I96_a_live_session_with_workers_reports_each_cells_final_verdict_everywhere(
    tmp_path: Path, canary: str
) -> None:
    where = tmp_path / "session"
    where.mkdir()
    (where / "reorder_cells.py").write_text(REORDER, encoding="utf-8")
    flag = tmp_path / "provider-down"
    path = os.pathsep.join(p for p in (str(where), os.environ.get("PYTHONPATH", "")) if p)
    with OutageProvider(canary, flag) as provider:
        session = run_session(
            where,
            [*SELECTION, "--sabot-framework=langgraph", "--sabot-config=default",
             "--sabot-operator=baseline,O1", "-n", "1", "-p", "reorder_cells",
             f"--sabot-model={MODEL}", f"--sabot-base-url={provider.url}"],
            clean_env({"OPENAI_API_KEY": canary, "SABOT_TEST_OUTAGE": str(flag),
                       "PYTHONPATH": path}),
            provider.log,
        )
    shown = session.stdout + session.stderr
    assert "1 worker" in session.stdout, shown[-3000:]
    # the fault cell ran first: its verdict then was provisional
    assert "provisional: baseline pending" in session.stdout, shown[-3000:]
    results = session.results
    final = {v.cell_id: outcome_of(v) for v in results.cells}
    assert final[FAULT].verdict == "BASELINE_FAIL", shown[-3000:]
    assert final[BASELINE].verdict == "RUN_ERROR"

    # the count line counts the final verdicts, nothing provisional
    count_line = [line for line in session.stdout.splitlines() if " in " in line
                  and line.startswith("=")][-1]
    assert "1 baseline_fail" in count_line and "1 run_error" in count_line, count_line
    assert "detected_hard" not in count_line and "missed" not in count_line, count_line

    # JUnit: each testcase carries the verdict of results.json
    junit = _junit_fields(session.junit, family_props=False)
    assert junit[FAULT]["sabot.verdict"] == "BASELINE_FAIL"
    assert junit[FAULT]["sabot.exclusion"] == "BASELINE_FAIL"
    assert junit[BASELINE]["sabot.verdict"] == "RUN_ERROR"

    # sabot export says the same as the session's own JUnit and results.json
    exported = tmp_path / "export.xml"
    assert main(["export", str(session.out), "--format", "junit", "--out",
                 str(exported)]) in (0, 3)
    again = _junit_fields(exported, family_props=False)
    for cell_id, outcome in final.items():
        assert again[cell_id]["sabot.verdict"] == outcome.verdict == junit[cell_id][
            "sabot.verdict"], cell_id
    assert again[FAULT]["sabot.acts"] == junit[FAULT]["sabot.acts"]
    board = session.stdout[session.stdout.index("Sabot scoreboard"):]
    assert "BASELINE_FAIL 1" in board
