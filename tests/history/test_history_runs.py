"""The history over real sessions (history_inputs.py): indexing an output root, listing,
showing, resolving run ids, and the regression check between runs of one registration.

SPEC I42 (sessions add records and never remove them; results.json describes the last
session), I43 (the sabot exit codes), I10 (keyless numbers are fixtures, said everywhere),
S10.5.3 (comparisons are paired by framework, config, operator, task and seed).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from history_inputs import Inputs, tree_digest

from pytest_sabot.commands.history import history_index, history_list, history_show, regress
from pytest_sabot.history import (
    RunNotFound,
    detect_regressions,
    index_output,
    list_runs,
    load_lab_run,
    load_run_results,
    record_session,
    resolve_run,
    show_run,
)
from pytest_sabot.history.queries import load_compare_input
from pytest_sabot.history.sources import read_manifest
from pytest_sabot.lab.record import read_run
from pytest_sabot.results import read_results
from pytest_sabot.results.compare import compare, load_side
from pytest_sabot.results.outcomes import outcome_of

pytestmark = pytest.mark.slow  # the inputs are five plugin sessions (about 30 s, once)

RUN_LINE = re.compile(r"^\d{8}T\d{6}Z-")
TABLES = ("schema_version", "runs", "cells", "score_rows", "snapshots")


def _dump(history: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(history)
    try:
        return {t: [tuple(r) for r in conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2")]
                for t in TABLES}
    finally:
        conn.close()


def _record_first_as_it_ended(inputs: Inputs, history: Path) -> None:
    """What the controller records when the first session ends, before the second
    session replaces its results.json."""
    record_session(history, inputs.wave1, read_results(inputs.first_results),
                   read_manifest(inputs.manifest("first")))


@pytest.fixture
def history(inputs: Inputs, tmp_path: Path) -> Path:
    path = tmp_path / "history.sqlite"
    _record_first_as_it_ended(inputs, path)
    report = index_output(inputs.root, path)
    assert report.problems == []
    return path


def _lab_ids(history: Path) -> list[str]:
    return [s.run_id for s in list_runs(history) if s.kind == "lab"]


def test_I42_index_output_finds_every_session_lab_run_and_results(
    inputs: Inputs, tmp_path: Path
) -> None:
    before = tree_digest(inputs.root)
    path = tmp_path / "history.sqlite"
    report = index_output(inputs.root, path)
    assert report.problems == [] and report.updated == [] and report.copies == []
    sessions = {inputs.ids[k] for k in ("first", "second", "vigilant", "credulous",
                                        "elsewhere")}
    lab = [i for i in report.added if "-lab-" in i]
    assert set(report.added) == sessions | set(lab) and len(lab) == 2
    assert sorted(report.scanned) == sorted(str(d) for d in (
        inputs.wave1, inputs.vigilant, inputs.credulous, inputs.elsewhere, inputs.lab))
    assert tree_digest(inputs.root) == before  # indexing only reads the output tree
    # the first session's results.json was replaced by the second's: its manifest is
    # indexed, its verdicts are not (they were never seen)
    first = show_run(path, inputs.ids["first"])
    assert first.summary.status == "complete" and first.cells == []
    assert not first.summary.verdicts and first.summary.fixture


def test_I42_indexing_the_same_sessions_twice_changes_nothing(
    inputs: Inputs, history: Path
) -> None:
    before = _dump(history)
    again = index_output(inputs.root, history)
    assert again.added == [] and again.updated == [] and again.problems == []
    assert len(again.unchanged) == len(before["runs"])
    _record_first_as_it_ended(inputs, history)
    second = record_session(history, inputs.wave1, read_results(inputs.wave1),
                            read_manifest(inputs.manifest("second")))
    assert second.action == "unchanged"
    assert _dump(history) == before


def test_I42_verdicts_recorded_when_a_session_ended_outlive_its_results_json(
    inputs: Inputs, history: Path
) -> None:
    first = show_run(history, inputs.ids["first"])
    recorded = read_results(inputs.first_results)
    assert {c.cell_id for c in first.cells} == {c.cell_id for c in recorded.cells}
    loaded = load_run_results(history, inputs.ids["first"])
    assert loaded.results == recorded
    assert "no longer holds this run's results" in loaded.note
    second = load_run_results(history, inputs.ids["second"])
    assert second.note == "" and second.source == str(inputs.wave1 / "results.json")


def test_I42_list_shows_runs_newest_first_with_hash_model_rules_status_counts(
    inputs: Inputs, history: Path
) -> None:
    runs = list_runs(history)
    started = [s.started or "" for s in runs]
    assert started == sorted(started, reverse=True)
    by_id = {s.run_id: s for s in runs}
    results = read_results(inputs.wave1)
    second = by_id[inputs.ids["second"]]
    assert second.registration_hash == results.registration_hash
    assert (second.model, second.rules, second.status) == ("sim:realistic", "v0.1.3",
                                                           "complete")
    assert second.counts == dict(Counter(outcome_of(v).verdict for v in results.cells))
    assert (second.selected, second.recorded) == (14, 14)
    assert by_id[inputs.ids["vigilant"]].counts == {"BASELINE_PASS": 2, "DETECTED_HARD": 12}
    assert by_id[inputs.ids["elsewhere"]].registration_hash != results.registration_hash
    gates = {tuple(by_id[i].counts) for i in _lab_ids(history)}
    assert gates == {("FAIL",), ("PASS",)}


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_I10_history_list_fits_the_terminal_and_labels_fixtures(
    width: int, history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert history_list(history, width=width) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    assert "never measurements of any LLM" in " ".join(out.split())
    table = [line for line in lines if RUN_LINE.match(line)]
    assert len(table) == 7 and all("fixture" in line for line in table)
    if width >= 200:
        header = next(line for line in lines if line.startswith("run "))
        for name in ("status", "hash", "model", "rules", "verdicts", "spend", "cells"):
            assert name in header


def test_I42_show_prints_the_sessions_fields_its_rows_and_its_cells(
    inputs: Inputs, history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = read_results(inputs.vigilant)
    prefix = inputs.ids["vigilant"][:19]
    detail = show_run(history, prefix)
    assert detail.summary.run_id == inputs.ids["vigilant"]
    assert detail.selection["filters"] == {"framework": ["langgraph"], "seed": ["11"],
                                           "task": ["T1"]}
    assert detail.versions == results.versions
    for row, mine in zip(results.scoreboard.rows, detail.rows, strict=True):
        assert (mine.row, mine.score_k, mine.score_n) == (row.row, row.sabot_score.k,
                                                          row.sabot_score.n)
        assert (mine.score_low, mine.score_high) == (row.sabot_score.ci_low,
                                                     row.sabot_score.ci_high)
        assert (mine.clean_k, mine.clean_n) == (row.clean_fire.k, row.clean_fire.n)
    cells = {c.cell_id: c for c in detail.cells}
    for v in results.cells:
        assert cells[v.cell_id].verdict == outcome_of(v).verdict
    o1 = cells["langgraph-guardrail-O1-T1-s11"]
    assert o1.funnel is not None and o1.funnel.startswith("DETECTED_HARD")
    assert o1.detection_path and o1.record_run == inputs.ids["vigilant"]
    assert history_show(history, prefix, width=100) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 100 for line in out.splitlines())
    assert "keyless: fixtures of the embedded model (sim:vigilant)" in out
    for v in results.cells:
        assert v.cell_id in out
    # a slice: its rows are said to be a partial board's, as every report says (SPEC I91)
    board = results.scoreboard
    assert results.partial_reasons and detail.partial == [
        *results.partial_reasons,
        f"{board.median_rows} of {board.registered_rows} rows in the median"]
    assert f"PARTIAL BOARD ({results.partial_reasons[0]}" in out
    assert out.index("PARTIAL BOARD") < out.index("Sabot Score")


def test_I42_a_run_indexed_without_its_results_takes_them_from_an_intact_copy(
    inputs: Inputs, tmp_path: Path,
) -> None:
    """A copy whose results.json was damaged gives the history the run without verdicts;
    an intact copy of the same session then completes it instead of being refused."""
    import shutil

    damaged, intact = tmp_path / "damaged" / "run", tmp_path / "intact" / "run"
    for where in (damaged, intact):
        shutil.copytree(inputs.vigilant, where)
    text = (damaged / "results.json").read_text("utf-8")
    (damaged / "results.json").write_text(text[:2000], "utf-8")
    history = tmp_path / "history.sqlite"
    first = index_output(damaged, history)
    assert first.added == [inputs.ids["vigilant"]] and first.problems
    assert show_run(history, inputs.ids["vigilant"]).cells == []
    second = index_output(intact, history)
    assert second.updated == [inputs.ids["vigilant"]] and not second.problems
    detail = show_run(history, inputs.ids["vigilant"])
    assert len(detail.cells) == len(read_results(intact).cells)
    assert detail.summary.out_dir == str(intact.resolve())


def test_I42_a_lab_run_is_recorded_with_its_gate(
    inputs: Inputs, history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    current = read_run(inputs.lab)
    earlier = read_run(inputs.lab / "run.prev-1.json")
    gates = {}
    for run_id in _lab_ids(history):
        detail = show_run(history, run_id)
        (cell,) = detail.cells
        gates[detail.summary.model] = (cell.gate, cell.gate_exit, detail.summary.label)
        assert load_lab_run(history, run_id) in (current, earlier)
    assert gates["builtin:naive"][:2] == (earlier.gate.outcome, 1)
    assert gates["builtin:resilient"][:2] == ("pass", 0)
    assert all("not a measurement of any model" in g[2] for g in gates.values())
    naive = next(i for i in _lab_ids(history)
                 if show_run(history, i).summary.model == "builtin:naive")
    assert regress(history, naive, inputs.ids["vigilant"]) == 2
    assert "lab run" in capsys.readouterr().err


def test_S10_5_3_resolve_run_takes_an_id_or_a_unique_prefix(
    inputs: Inputs, history: Path
) -> None:
    vid = inputs.ids["vigilant"]
    assert resolve_run(history, vid) == inputs.vigilant.resolve()
    assert resolve_run(history, vid[:20]) == inputs.vigilant.resolve()
    with pytest.raises(RunNotFound, match="is the prefix of 7 run ids"):
        resolve_run(history, "20")
    with pytest.raises(RunNotFound, match="no run id starts with 'nope'"):
        resolve_run(history, "nope")


def test_S10_5_3_a_mistyped_path_is_named_as_a_path_not_only_as_a_run_id(
    inputs: Inputs, history: Path, tmp_path: Path,
) -> None:
    for ref in (str(tmp_path / "no" / "such"), "reports/wave-9/results.json"):
        with pytest.raises(RunNotFound, match="is no directory or file here") as raised:
            load_compare_input(ref, history)
        assert ref in str(raised.value) and "no run id starts with it" in str(raised.value)


def test_S10_5_3_compare_reads_run_ids_like_directories(
    inputs: Inputs, history: Path
) -> None:
    a, _ = load_compare_input(inputs.ids["vigilant"][:20], history)
    b, source = load_compare_input(inputs.ids["credulous"], history)
    assert source == str(inputs.credulous.resolve() / "results.json")
    by_id = compare(a, b)
    by_dir = compare(load_side(inputs.vigilant), load_side(inputs.credulous))
    assert by_id == by_dir
    same, where = load_compare_input(str(inputs.credulous), history)
    assert same == b and where == str(inputs.credulous)


def test_I43_vigilant_to_credulous_is_a_regression_and_the_reverse_is_not(
    inputs: Inputs, history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vigilant, credulous = inputs.ids["vigilant"], inputs.ids["credulous"]
    assert regress(history, vigilant, credulous, width=120) == 1
    out = capsys.readouterr().out
    assert "outcome: REGRESSION (exit 1)" in out
    assert "regressed: langgraph-default, langgraph-guardrail" in out
    assert "fixtures of the embedded model" in out
    assert regress(history, credulous, vigilant, width=120) == 0
    out = capsys.readouterr().out
    assert "outcome: NO REGRESSION (exit 0)" in out and "improvement" in out
    report = detect_regressions(read_results(inputs.vigilant), read_results(inputs.credulous))
    assert [(r.row, r.status, r.paired) for r in report.rows] == [
        ("langgraph-default", "regression", 6), ("langgraph-guardrail", "regression", 6)]
    assert all(r.ci_high is not None and r.ci_high < 0 for r in report.rows)


def test_I43_the_same_slice_run_twice_is_no_regression(
    inputs: Inputs, history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert regress(history, inputs.ids["first"], inputs.ids["second"], as_json=True) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["outcome"] == "no regression"
    assert "copy of run" in report["a"]["source"]  # A's results.json was replaced
    assert all(r["status"] == "no regression" and r["difference"] == 0
               for r in report["rows"])
    assert report["a"]["fixture"] and report["b"]["fixture"]


def test_I43_runs_of_different_registrations_are_not_compared(
    inputs: Inputs, history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert regress(history, inputs.ids["vigilant"], inputs.ids["elsewhere"]) == 3
    out = capsys.readouterr().out
    assert "INCONCLUSIVE (exit 3)" in out and "registration_hash differs" in out
    report = detect_regressions(read_results(inputs.vigilant), read_results(inputs.elsewhere))
    assert report.rows == []  # a would-be regression, not read across registrations


def test_I43_rows_with_too_few_paired_cells_are_inconclusive(
    inputs: Inputs, history: Path
) -> None:
    vigilant, credulous = inputs.ids["vigilant"], inputs.ids["credulous"]
    assert regress(history, vigilant, credulous, min_paired=7) == 3
    a = read_results(inputs.vigilant)
    b = read_results(inputs.credulous)
    one_row = b.model_copy(update={"cells": [c for c in b.cells if c.row == "langgraph-default"]})
    report = detect_regressions(a, one_row)
    assert [(r.row, r.status) for r in report.rows] == [
        ("langgraph-default", "regression"), ("langgraph-guardrail", "not tested")]
    assert report.exit_code == 1


def test_I42_a_copy_is_indexed_once_a_moved_directory_is_followed(
    inputs: Inputs, history: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copies" / "vigilant"
    shutil.copytree(inputs.vigilant, copy)
    report = index_output(copy.parent, history)
    assert report.copies == [inputs.ids["vigilant"]] and report.added == []
    fresh = tmp_path / "fresh.sqlite"
    index_output(copy.parent, fresh)
    moved = tmp_path / "moved" / "vigilant"
    moved.parent.mkdir()
    copy.rename(moved)
    report = index_output(moved.parent, fresh)
    assert report.updated == [inputs.ids["vigilant"]]
    assert resolve_run(fresh, inputs.ids["vigilant"]) == moved.resolve()


def test_I42_a_changed_copy_under_the_same_run_id_is_refused(
    inputs: Inputs, history: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copies" / "vigilant"
    shutil.copytree(inputs.vigilant, copy)
    raw = json.loads((copy / "results.json").read_text(encoding="utf-8"))
    raw["label"] = raw["label"] + " (edited)"
    (copy / "results.json").write_text(json.dumps(raw), encoding="utf-8")
    before = _dump(history)
    report = index_output(copy.parent, history)
    (problem,) = report.problems
    assert inputs.ids["vigilant"] in problem.problem and "other content" in problem.problem
    assert _dump(history) == before


def test_I43_index_names_a_broken_record_and_indexes_the_rest(
    inputs: Inputs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "out" / "wave-1"
    shutil.copytree(inputs.wave1, copy)
    broken = copy / "sessions" / f"{inputs.ids['first']}.json"
    broken.write_text('{"run_id": 7', encoding="utf-8")
    path = tmp_path / "history.sqlite"
    assert history_index(path, [copy], width=400) == 2
    out = capsys.readouterr().out
    assert f"not indexed: {broken}: field 'line 1': expected valid JSON, got 'EOF while" in out
    assert [s.run_id for s in list_runs(path)] == [inputs.ids["second"]]


def test_I43_the_module_command_lists_and_checks_runs(inputs: Inputs, history: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest_sabot.history", "--history", str(history), *args],
            capture_output=True, text=True, check=False, timeout=120,
            env={**os.environ, "COLUMNS": "100"},
        )

    listed = run("list", "--limit", "2")
    assert listed.returncode == 0 and "Sabot run history" in listed.stdout
    words = " ".join(listed.stdout.split())  # the header wraps at the terminal's width
    assert f"(2 of {len(list_runs(history))} run(s), newest first)" in words
    assert sum(bool(RUN_LINE.match(line)) for line in listed.stdout.splitlines()) == 2
    regressed = run("regress", inputs.ids["vigilant"], inputs.ids["credulous"],
                    "--resamples", "2000")
    assert regressed.returncode == 1, regressed.stderr
    resolved = run("resolve", inputs.ids["credulous"][:20])
    assert resolved.stdout.strip() == str(inputs.credulous.resolve())
    unknown = run("show", "nope")
    assert unknown.returncode == 2 and "no run id starts with 'nope'" in unknown.stderr
    assert "Traceback" not in unknown.stderr



def test_23_4_an_excluded_fault_cell_has_one_letter_in_pytest_and_in_sabot_history(
    inputs: Inputs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_sabot.commands.cli import main as sabot

    run = tmp_path / "vigilant"
    shutil.copytree(inputs.vigilant, run)
    # One baseline fails its task: rescored with the real scorer, the fault cells of its
    # configuration are excluded as BASELINE_FAIL while the baseline itself is BASELINE_FAIL.
    (baseline,) = (run / "cells").glob("langgraph-default-baseline-*")
    outcome = baseline / "outcome.json"
    outcome.write_text(json.dumps({**json.loads(outcome.read_text()), "passed": False,
                                   "pass_reason": "set to failed by the test"}))
    assert sabot(["rescore", str(run), "--write"]) == 0
    capsys.readouterr()
    results = read_results(run)
    shown = Counter(outcome_of(v).letter for v in results.cells)  # pytest's letters
    excluded = [c for c in results.cells if getattr(c, "excluded", None) is not None]
    assert shown["B"] == 1 and shown["b"] == len(excluded) > 0
    assert all(c.cell_id.startswith("langgraph-default-") for c in excluded)

    path = tmp_path / "history.sqlite"
    assert index_output(run, path).problems == []
    (summary,) = list_runs(path)
    assert summary.letters == dict(shown)
    assert summary.counts["BASELINE_FAIL"] == 1 + len(excluded)  # one word, two letters
    assert history_list(path, width=200) == 0
    out = capsys.readouterr().out
    assert f" 1B {shown['H']}H {len(excluded)}b" in out.replace("1P ", "")
    assert "B baseline fail" in out and "b excluded (baseline failed)" in out


def test_I91_compare_heads_a_partial_side_with_why_it_is_partial(inputs: Inputs) -> None:
    """Every table of a partial board says so; the comparison's description of each side
    does too, not only its closing line."""
    from pytest_sabot.commands.compare import _describe

    side = compare(load_side(inputs.vigilant), load_side(inputs.credulous))
    for info in (side.a, side.b):
        results = read_results(inputs.vigilant if info is side.a else inputs.credulous)
        assert info.partial == "; ".join(results.partial_reasons)
        assert info.partial.startswith("a slice, ")  # these inputs are slices
        assert f"   PARTIAL: {info.partial}" in _describe("A", info)


def test_I43_history_show_names_the_gates_a_session_failed(tmp_path: Path) -> None:
    from history_inputs import SESSION_TIMEOUT_S, SLICE, _env

    out = tmp_path / "reports" / "gated"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
         f"--sabot-out={out}", *SLICE, "--sabot-fail-under=0.99"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=SESSION_TIMEOUT_S,
        check=False)
    assert proc.returncode == 1, proc.stdout[-3000:]
    results = read_results(out / "results.json")
    failed = [g.message for g in results.gates or [] if not g.passed]
    assert failed
    history = out.parent / "history.sqlite"
    (run,) = list_runs(history)
    detail = show_run(history, run.run_id)
    assert detail.gates_failed == failed
    shown = subprocess.run(
        [sys.executable, "-m", "pytest_sabot.commands.cli", "history", "show", run.run_id,
         "--history", str(history)], cwd=tmp_path, env=_env(), capture_output=True,
        text=True, timeout=120, check=False)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("GATE FAILED") == len(failed)
    assert all(m in shown.stdout for m in failed), shown.stdout
