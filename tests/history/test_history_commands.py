"""The history as the sessions left it: each of history_inputs.py's plugin sessions
recorded itself in its output root's history.sqlite as it ended (SPEC I76), and the
``sabot`` commands read it by run id: ``history``, ``compare``, ``regress`` (exit 1 on a
regression, 0 without, 3 across registrations) and ``export`` (SPEC I80)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from history_inputs import Inputs

from pytest_sabot.commands.cli import main
from pytest_sabot.history import list_runs, show_run
from pytest_sabot.results import ResultsFile, read_results
from pytest_sabot.results.outcomes import outcome_of

pytestmark = pytest.mark.slow  # the inputs are five plugin sessions (about 30 s, once)

XSD = Path(__file__).resolve().parents[1] / "data" / "junit-10.xsd"


@pytest.fixture
def recorded(inputs: Inputs) -> Path:
    """The history the sessions wrote themselves (nothing indexed by the tests)."""
    return inputs.root / "history.sqlite"


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


def test_I76_each_session_recorded_itself_as_it_ended(inputs: Inputs, recorded: Path) -> None:
    ids = {r.run_id for r in list_runs(recorded)}
    assert {inputs.ids[n] for n in ("first", "second", "vigilant", "credulous")} <= ids
    # the first session's verdicts were recorded before the second replaced results.json
    first = show_run(recorded, inputs.ids["first"])
    expected = read_results(inputs.first_results)
    assert {c.cell_id: c.verdict for c in first.cells if c.kind in ("fault", "baseline")} == {
        v.cell_id: outcome_of(v).verdict for v in expected.cells}
    assert first.summary.registration_hash == expected.registration_hash


def test_I76_the_other_registration_recorded_itself_in_its_own_root(inputs: Inputs) -> None:
    # elsewhere/ is an output directory of the same root: the same history, another hash
    runs = {r.run_id: r for r in list_runs(inputs.root / "history.sqlite")}
    mine = runs[inputs.ids["elsewhere"]]
    assert mine.registration_hash == read_results(inputs.elsewhere).registration_hash
    assert mine.registration_hash != runs[inputs.ids["vigilant"]].registration_hash


def test_I43_sabot_regress_by_run_id_exits_1_on_a_drop_and_0_without(
    inputs: Inputs, recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vigilant, credulous = inputs.ids["vigilant"], inputs.ids["credulous"]
    assert main(["regress", vigilant, credulous, "--history", str(recorded)]) == 1
    assert "outcome: REGRESSION (exit 1)" in capsys.readouterr().out
    assert main(["regress", credulous, vigilant, "--history", str(recorded)]) == 0
    assert "outcome: NO REGRESSION (exit 0)" in capsys.readouterr().out


def test_I43_sabot_regress_refuses_runs_of_two_registrations_clearly(
    inputs: Inputs, recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["regress", inputs.ids["vigilant"], inputs.ids["elsewhere"], "--history",
                 str(recorded), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 3 and report["outcome"] == "inconclusive" and report["rows"] == []
    assert "not runs of the same registration" in report["reasons"][0]
    assert "registration_hash differs" in report["reasons"][0]


def test_S10_5_3_sabot_compare_takes_run_ids_and_directories_alike(
    inputs: Inputs, recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_id = main(["compare", inputs.ids["vigilant"], inputs.ids["credulous"][:20],
                  "--history", str(recorded), "--json"])
    ids = json.loads(capsys.readouterr().out)
    by_dir = main(["compare", str(inputs.vigilant), str(inputs.credulous), "--json"])
    dirs = json.loads(capsys.readouterr().out)
    assert by_id == by_dir == 0
    assert ids["rows"] == dirs["rows"] and ids["paired"] == dirs["paired"] == 12
    assert main(["compare", "no-such-run", str(inputs.credulous), "--history",
                 str(recorded)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no-such-run" in err


@pytest.mark.parametrize("width", [80, 120])
def test_I76_sabot_compare_fits_the_terminal(
    inputs: Inputs, width: int, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["compare", str(inputs.vigilant), str(inputs.credulous)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(len(x) <= width for x in lines), max(lines, key=len)
    assert any(x.startswith("langgraph-default") for x in lines)


def test_I80_export_json_by_run_id_is_the_run_results(
    inputs: Inputs, recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", inputs.ids["credulous"], "--format", "json", "--history",
                 str(recorded)]) == 0
    assert capsys.readouterr().out == (inputs.credulous / "results.json").read_text("utf-8")
    # a run whose results.json a later session replaced: the history's copy
    out = tmp_path / "first.json"
    assert main(["export", inputs.ids["first"], "--format", "json", "--out", str(out),
                 "--history", str(recorded)]) == 0
    assert ResultsFile.model_validate_json(out.read_text("utf-8")) == read_results(
        inputs.first_results)


def test_I80_export_html_of_a_replaced_run_is_refused_in_one_line(
    inputs: Inputs, recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", inputs.ids["first"], "--format", "html", "--out",
                 str(tmp_path / "r.html"), "--history", str(recorded)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--format json" in err
    assert not (tmp_path / "r.html").exists()
    assert main(["export", inputs.ids["vigilant"], "--format", "html", "--out",
                 str(tmp_path / "v.html"), "--history", str(recorded)]) == 0
    assert "<html" in (tmp_path / "v.html").read_text("utf-8")


def test_I80_export_junit_validates_and_carries_every_cell_verdict(
    inputs: Inputs, recorded: Path, tmp_path: Path
) -> None:
    out = tmp_path / "junit.xml"
    assert main(["export", inputs.ids["credulous"], "--format", "junit", "--out", str(out),
                 "--history", str(recorded)]) == 0
    xmlschema.XMLSchema(str(XSD)).validate(str(out))
    results = read_results(inputs.credulous)
    suite = ET.parse(out).getroot().find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["sabot.run_id"] == inputs.ids["credulous"]
    assert props["sabot.registration_hash"] == results.registration_hash
    for row in results.scoreboard.rows:
        assert props[f"sabot.score.{row.row}"] == f"{row.sabot_score.value:.4f}"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert int(suite.get("tests", "0")) == len(cases)
    for v in results.cells:
        case = cases[f"test_cell[{v.cell_id}]"]  # named as the session's own XML names it
        assert case.get("classname") == f"sabot.wave{results.wave}.{v.row}"
        text = case.findtext("system-out") or ""
        assert f"sabot.verdict={outcome_of(v).verdict}\n" in text
        assert case.find("failure") is None  # a verdict is a measurement, not a failure


@pytest.mark.parametrize("module", ["pytest_sabot", "pytest_sabot.history"])
def test_I76_history_list_into_a_closed_pipe_exits_as_it_would_into_a_terminal(
    recorded: Path, module: str
) -> None:
    """``python -m pytest_sabot.history list | head -1`` is ``sabot history list | head -1``:
    the reader gone, the command still exits with its own code and says nothing."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    command = [sys.executable, "-m", module, *(["history"] if module == "pytest_sabot" else []),
               "--history", str(recorded), "list"]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(command, stdout=write_end, stderr=subprocess.PIPE, text=True,
                              env=env, timeout=120, check=False)
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
