"""Every lab run is evidence you can open and hand to CI (issue 24, "Evidence of every
run"): whatever entry point ran it, ``run.json`` has ``report.html`` and ``junit.xml``
beside it, all three written by one function (``commands.lab_outputs.write_lab_run``), and
the run is recorded in the SQLite history the same way.

The JUnit XML is checked against the junit-10 schema in tests/data (with xmlschema) and
read back with junitparser, as a CI dashboard reads it: the gate is the testcase outcome.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import xmlschema
from junitparser import Error, Failure, JUnitXml, Skipped
from lab_helpers import run, scenario

from pytest_sabot.commands.cli import main as sabot
from pytest_sabot.commands.lab import main as lab_main
from pytest_sabot.commands.lab_outputs import write_lab_run
from pytest_sabot.history import list_runs
from pytest_sabot.lab.controllers import CONTROLLERS
from pytest_sabot.lab.gate import evaluate
from pytest_sabot.lab.record import Execution, LabRun, read_run
from pytest_sabot.report.lab_junit import lab_junit_xml

XSD = Path(__file__).resolve().parents[1] / "data" / "junit-10.xsd"
FILES = ("junit.xml", "report.html", "run.json")


def _schema(outcome: str) -> xmlschema.XMLSchema:
    """The junit-10 schema of tests/data. Its copy names the testcase's error element
    ``errors`` where the schema it was taken from (and every JUnit reader: junitparser,
    pytest, Jenkins) says ``error``; for an error outcome that one name is read as the
    readers read it (SPEC I141)."""
    text = XSD.read_text(encoding="utf-8")
    if outcome == "error":
        text = text.replace('<xs:element name="errors">', '<xs:element name="error">')
        text = text.replace('<xs:element ref="errors"/>', '<xs:element ref="error"/>')
    return xmlschema.XMLSchema(text)


def _crashing(ctx: object) -> None:
    raise RuntimeError("the agent's own bug")


def _records() -> dict[str, LabRun]:
    lost = scenario("lost-create-response")
    failed = run(lost, CONTROLLERS["builtin:naive"])
    broken = failed.model_copy(update={"execution": Execution(
        status="harness_error", detail="RuntimeError: store lost")})
    return {
        "pass": run(lost, CONTROLLERS["builtin:resilient"]),
        "fail": failed,
        "error": broken.model_copy(update={"gate": evaluate(broken)}),
        "inconclusive": run(lost, _crashing),
    }


def test_every_lab_run_writes_report_html_and_junit_xml_beside_run_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SABOT_HISTORY", str(tmp_path / "h.sqlite"))
    out = tmp_path / "naive"
    assert sabot(["lab", "run", "lost-create-response", "--agent", "builtin:naive",
                  "--out", str(out)]) == 1
    assert sorted(p.name for p in out.iterdir()) == list(FILES)
    record = read_run(out)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert record.run_id in page and 'data-outcome="fail"' in page
    assert (out / "junit.xml").read_text(encoding="utf-8") == lab_junit_xml(record)


@pytest.mark.parametrize("outcome", ["pass", "fail", "error", "inconclusive"])
def test_junit_gate_is_the_testcase_outcome_and_validates_against_junit_10(
    outcome: str, tmp_path: Path,
) -> None:
    record = _records()[outcome]
    assert record.gate.outcome == outcome
    done = write_lab_run(tmp_path, record, history=False)
    assert done.history == "" and not list(tmp_path.glob("*.sqlite"))
    _schema(outcome).validate(str(done.junit))
    suite = next(iter(JUnitXml.fromfile(str(done.junit))))
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (
        1, int(outcome == "fail"), int(outcome == "error"), int(outcome == "inconclusive"))
    [case] = list(suite)
    assert case.name == record.agent.name
    assert case.classname == f"sabot.lab.{record.scenario.name}"
    kinds = [type(r) for r in case.result]
    expected = {"pass": [], "fail": [Failure], "error": [Error], "inconclusive": [Skipped]}
    assert kinds == expected[outcome]
    if outcome == "fail":
        assert "LS1" in case.result[0].message  # the duplicate ticket, named
    if outcome == "inconclusive":  # skipped with the reason
        assert case.result[0].message.startswith("inconclusive: execution agent_error")
    props = {p.name: p.value for p in suite.properties()}
    assert props["sabot.lab.gate"] == outcome
    assert props["sabot.lab.exit_code"] == str(record.gate.exit_code)
    assert props["sabot.lab.run_id"] == record.run_id
    assert f"sabot.lab.gate={outcome}" in (case.system_out or "")


def test_the_junit_10_copy_rejects_an_unknown_outcome_element(tmp_path: Path) -> None:
    """The schema check can fail: the same XML with a made-up outcome element is refused."""
    text = lab_junit_xml(_records()["fail"]).replace("<failure ", "<verdict ").replace(
        "</failure>", "</verdict>")
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        _schema("fail").validate(text)


def test_every_entry_point_records_into_the_history_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    history = tmp_path / "history.sqlite"
    env = {**os.environ, "SABOT_HISTORY": str(history)}
    # python -m pytest_sabot.lab run: its own interpreter, as a user runs it
    module = tmp_path / "module"
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sabot.lab", "run", "lost-create-response", "--agent",
         "builtin:resilient", "--out", str(module)],
        capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert f"added in {history}" in done.stderr
    monkeypatch.setenv("SABOT_HISTORY", str(history))
    assert lab_main(["run", "lost-create-response", "--agent", "builtin:naive",
                     "--out", str(tmp_path / "sabot-lab")], prog="sabot lab") == 1
    assert lab_main(["demo", "--out", str(tmp_path / "demo")]) == 0
    runs = list_runs(history)
    recorded = {Path(r.out_dir).resolve() for r in runs}
    for folder in ("module", "sabot-lab", "demo/naive", "demo/resilient", "demo/noop"):
        assert (tmp_path / folder).resolve() in recorded, folder
        assert sorted(p.name for p in (tmp_path / folder).iterdir()) == list(FILES)
    assert {r.kind for r in runs} == {"lab"} and len(runs) == 5


def _demo(tmp_path: Path) -> Path:
    out = tmp_path / "demo"
    assert lab_main(["demo", "--out", str(out)], history=False) == 0
    return out


def test_sabot_export_accepts_a_lab_run_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    naive = _demo(tmp_path) / "naive"
    record = read_run(naive)
    capsys.readouterr()
    assert sabot(["export", str(naive / "run.json"), "--format", "json"]) == 0
    assert capsys.readouterr().out == (naive / "run.json").read_text(encoding="utf-8")
    assert sabot(["export", str(naive), "--format", "junit", "--out",
                  str(tmp_path / "j.xml")]) == 0
    assert (tmp_path / "j.xml").read_text(encoding="utf-8") == lab_junit_xml(record)
    assert sabot(["export", str(naive), "--format", "html", "--out",
                  str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert page == (naive / "report.html").read_text(encoding="utf-8")
    err = capsys.readouterr().err
    assert "compar" not in err  # the old refusal talked about comparing


def test_sabot_export_and_inspect_find_a_lab_run_by_its_history_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    history = tmp_path / "h.sqlite"
    monkeypatch.setenv("SABOT_HISTORY", str(history))
    assert sabot(["lab", "run", "lost-create-response", "--agent", "builtin:naive",
                  "--out", str(tmp_path / "run")]) == 1
    [entry] = list_runs(history)
    capsys.readouterr()
    assert sabot(["export", entry.run_id, "--format", "junit"]) == 0
    assert capsys.readouterr().out == lab_junit_xml(read_run(tmp_path / "run"))
    assert sabot(["inspect", entry.run_id[:20], "--json"]) == 0
    assert '"stream": "violation"' in capsys.readouterr().out


def test_sabot_inspect_prints_a_lab_runs_timeline_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    naive = _demo(tmp_path) / "naive"
    capsys.readouterr()
    assert sabot(["inspect", str(naive / "run.json"), "--json"]) == 0
    t = json.loads(capsys.readouterr().out)
    record = read_run(naive)
    streams = [e["stream"] for e in t["events"]]
    assert {"requests", "deliveries", "effects", "observations", "fault",
            "violation"} <= set(streams)
    seqs = [e["seq"] for e in t["events"]]
    assert seqs == sorted(seqs)
    s = record.streams
    assert streams.count("requests") == len(s.requests)
    assert streams.count("effects") == len(s.effects)
    # the fault shows on the request it acted on, before that request's delivery
    fault = streams.index("fault")
    assert t["events"][fault - 1]["id"] == record.coverage[0].activations[0].request_id
    assert streams[fault + 1] == "deliveries"
    # LS1 stands right after the last event it cites (the duplicate's observation)
    ls1 = next(e for e in t["events"] if e["id"] == "LS1")
    assert ls1["seq"] == record.gate.violations[0].evidence[-1].seq
    assert (t["gate"], t["exit_code"]) == ("fail", 1)
    assert sabot(["inspect", str(naive)]) == 0
    text = capsys.readouterr().out
    assert "gate: fail (exit 1)" in text and "LS1" in text and "timeout_after_commit" in text


def test_the_same_record_written_again_is_left_as_it_is_and_another_is_set_aside(
        tmp_path: Path) -> None:
    """The engine writes run.json, then the command writes the run's outputs: the same
    record twice sets nothing aside; a different record sets the earlier one aside."""
    from pytest_sabot.lab.controllers import resolve_agent
    from pytest_sabot.lab.engine import run_scenario

    out = tmp_path / "run"
    naive = run_scenario(scenario("lost-create-response"), resolve_agent("builtin:naive"), out)
    before = (out / "run.json").stat().st_mtime_ns
    write_lab_run(out, naive, history=False)
    assert (out / "run.json").stat().st_mtime_ns == before
    assert not list(out.glob("run.prev-*.json"))
    resilient = run(scenario("lost-create-response"), CONTROLLERS["builtin:resilient"])
    write_lab_run(out, resilient, history=False)
    assert read_run(out / "run.prev-1.json") == naive
    assert read_run(out) == resilient


def test_a_scripted_controllers_run_says_it_calls_no_model_provider() -> None:
    from pytest_sabot.report.lab import run_text

    scripted = _records()["pass"]
    assert scripted.agent.fixture
    text = run_text(scripted)
    assert "no model provider (a scripted controller calls none)" in text
    assert "unknown calls" not in text
    agent = scripted.model_copy(update={"agent": scripted.agent.model_copy(
        update={"fixture": False})})
    assert "provider usage not observed (model calls and cost unknown)" in run_text(agent)
