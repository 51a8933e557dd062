"""Every session records itself in the run history as it ends (SPEC I76): pytest sessions
(keyless and live, with xdist too: the controller alone writes), lab runs through ``sabot
lab``; a damaged or locked history costs the session nothing but its entry, said in one
line. ``sabot history`` lists what was recorded, ``history show`` one run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from evidence_sessions import BASELINE, FAULT, keyless, tree_digest
from live_sessions import Session

from pytest_sabot.commands.cli import main
from pytest_sabot.history import list_runs, show_run
from pytest_sabot.results import read_results

pytestmark = pytest.mark.slow  # whole plugin sessions in fresh interpreters

NOT_RECORDED = "is not in the run history"


def _manifest_ids(out: Path) -> list[str]:
    return sorted(p.stem for p in (out / "sessions").glob("*.json"))


def test_I76_a_live_session_is_recorded_at_its_end_with_versions_spend_and_cells(
    vigilant: Session,
) -> None:
    # where/out sits in the working directory: it records into reports/ (SPEC I100)
    history = vigilant.where / "reports" / "history.sqlite"
    [run_id] = _manifest_ids(vigilant.out)
    assert f"history: session {run_id} added in {history}" in vigilant.stdout
    results = read_results(vigilant.out)
    detail = show_run(history, run_id)
    s = detail.summary
    assert (s.kind, s.status, s.wave, s.rules) == ("session", "complete", 1, results.rules)
    assert s.registration_hash == results.registration_hash
    assert s.model == "openai:gpt-5.6-terra" and not s.fixture
    assert detail.versions == results.versions and "langgraph" in detail.versions
    assert detail.tool == results.tool
    assert detail.selection["filters"]["framework"] == ["langgraph"]
    assert s.spent_usd is not None and s.spent_usd > 0
    assert detail.spend is not None and detail.spend["calls"] > 0
    cells = {c.cell_id: (c.verdict, c.funnel, c.gate) for c in detail.cells}
    assert cells == {
        BASELINE: ("BASELINE_PASS", None, "pass"),
        FAULT: ("DETECTED_HARD", "DETECTED_HARD REACTED RECOVERED", "pass"),
    }


def test_I76_a_failed_task_is_recorded_with_a_failing_gate(credulous: Session) -> None:
    [run_id] = _manifest_ids(credulous.out)
    detail = show_run(credulous.where / "reports" / "history.sqlite", run_id)
    fault = next(c for c in detail.cells if c.cell_id == FAULT)
    assert (fault.verdict, fault.gate, fault.gate_exit) == ("MISSED", "fail", 1)


def test_I76_sabot_history_lists_the_sessions_with_their_hashes(
    vigilant: Session, credulous: Session, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    history = tmp_path / "history.sqlite"
    assert main(["history", "--history", str(history), "index",
                 str(vigilant.out), str(credulous.out)]) == 0
    capsys.readouterr()
    assert main(["history", "--history", str(history)]) == 0
    listed = capsys.readouterr().out
    for session in (vigilant, credulous):
        [run_id] = _manifest_ids(session.out)
        line = next(x for x in listed.splitlines() if x.startswith(run_id))
        assert read_results(session.out).registration_hash[:12] in line
    [run_id] = _manifest_ids(credulous.out)
    assert main(["history", "show", run_id[:18], "--history", str(history)]) == 0
    shown = capsys.readouterr().out
    assert f"run {run_id}" in shown and "MISSED" in shown


def test_I76_only_the_xdist_controller_records_the_session(tmp_path: Path) -> None:
    code, output, out = keyless(tmp_path, ["-n", "2"])
    assert code == 0, output[-3000:]
    [run_id] = _manifest_ids(out)
    runs = list_runs(out.parent / "history.sqlite")
    assert [r.run_id for r in runs] == [run_id]
    assert output.count(f"history: session {run_id} added") == 1
    detail = show_run(out.parent / "history.sqlite", run_id)
    assert sorted(c.cell_id for c in detail.cells) == sorted(
        c.cell_id for c in read_results(out).cells)


def test_I76_a_corrupt_history_costs_the_session_nothing_and_says_so_in_one_line(
    tmp_path: Path,
) -> None:
    history = tmp_path / "damaged.sqlite"
    history.write_bytes(bytes(range(256)) * 32)
    damaged = history.read_bytes()
    code, output, out = keyless(tmp_path, [f"--sabot-history={history}"])
    assert code == 0, output[-3000:]  # the session's own status
    said = [x for x in output.splitlines() if NOT_RECORDED in x]
    assert len(said) == 1
    assert str(history) in said[0] and "not a readable Sabot history" in said[0]
    assert f"index {out}" in said[0]  # how to add it later
    assert history.read_bytes() == damaged
    results = read_results(out)
    [run_id] = _manifest_ids(out)
    assert results.session is not None and results.session.run_id == run_id
    assert (out / "report.html").is_file() and (out / "RESULTS.md").is_file()


def test_I76_a_locked_history_costs_the_session_nothing_and_says_so_in_one_line(
    tmp_path: Path,
) -> None:
    history = tmp_path / "held.sqlite"
    code, output, _ = keyless(tmp_path / "first", [f"--sabot-history={history}"])
    assert code == 0 and history.is_file(), output[-3000:]
    holder = sqlite3.connect(history, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock all along
    try:
        code, output, out = keyless(tmp_path / "second", [f"--sabot-history={history}"])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 0, output[-3000:]
    said = [x for x in output.splitlines() if NOT_RECORDED in x]
    assert len(said) == 1
    assert str(history) in said[0] and "another process is writing the history" in said[0]
    before = tree_digest(out)
    assert read_results(out).session is not None
    assert len(list_runs(history)) == 1  # nothing half written
    assert main(["history", "--history", str(history), "index", str(out)]) == 0
    assert len(list_runs(history)) == 2  # added later from its intact files
    assert tree_digest(out) == before


def test_I76_sabot_history_none_records_nothing(tmp_path: Path) -> None:
    code, output, out = keyless(tmp_path, ["--sabot-history=none"])
    assert code == 0, output[-3000:]
    assert not (out.parent / "history.sqlite").exists()
    assert "history:" not in output and NOT_RECORDED not in output


def test_I76_a_lab_run_through_sabot_lab_is_recorded_with_its_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SABOT_HISTORY", raising=False)
    out = tmp_path / "reports" / "lab"
    code = main(["lab", "run", "helpdesk/lost-create-response", "--agent", "builtin:naive",
                 "--out", str(out), "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == record["gate"]["exit_code"] == 1
    [run] = list_runs(tmp_path / "reports" / "history.sqlite")
    assert run.kind == "lab" and run.model == "builtin:naive"
    detail = show_run(tmp_path / "reports" / "history.sqlite", run.run_id)
    assert [(c.cell_id, c.gate, c.gate_exit) for c in detail.cells] == [
        (record["run_id"], "fail", 1)]


def test_I76_sabot_demo_records_each_persona_it_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SABOT_HISTORY", raising=False)
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    history = tmp_path / "history.sqlite"  # where a session writing to out is recorded
    assert not (out / "history.sqlite").exists()
    runs = {r.model: r for r in list_runs(history) if r.kind != "lab"}
    assert sorted(runs) == ["sim:credulous", "sim:vigilant"]
    for model, run in runs.items():
        persona = model.split(":")[1]
        assert f"history: run {run.run_id} added in {history}" in err
        results = read_results(out / persona)
        assert run.fixture and run.registration_hash == results.registration_hash
        detail = show_run(history, run.run_id)
        assert sorted(c.cell_id for c in detail.cells if c.kind in ("fault", "baseline")) == \
            sorted(v.cell_id for v in results.cells)
