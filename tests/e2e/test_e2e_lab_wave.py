"""A keyless slice of the lab matrix across the three frameworks, run as users run it
(``pytest --sabot-wave=lab -n 2``): every cell records the lab gate beside the Sabot
funnel, results.json and the terminal summary carry the gate rates per row and fault, and
no outcome is dropped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from e2e_sessions import Session, describe, run_session

from pytest_sabot.matrix.standard import load_standard
from pytest_sabot.results import build_results

pytestmark = pytest.mark.slow

SLICE = "s11 and (baseline or O8 or O10)"


@pytest.fixture(scope="module")
def lab_slice(tmp_path_factory: pytest.TempPathFactory) -> Session:
    where = tmp_path_factory.mktemp("lab-slice")
    return run_session(where, ["--sabot-wave=lab", "-n", "2", "-k", SLICE])


def test_L_lab_wave_runs_keyless_across_the_three_frameworks(lab_slice: Session) -> None:
    assert lab_slice.returncode == 0, describe(lab_slice)
    results = lab_slice.results
    assert results.fixture and results.lab_gates is not None
    rows = {r.row for r in results.lab_gates.by_row}
    assert rows == {f"{fw}-{cfg}" for fw in ("langgraph", "crewai", "autogen")
                    for cfg in ("default", "guardrail")}
    assert "lab gate beside the Sabot funnel" in lab_slice.stdout
    assert "Sabot scoreboard: lab matrix (wave 102, not a wave of the standard)" in lab_slice.stdout


def test_23_4_the_lab_gate_table_fits_an_80_column_terminal(lab_slice: Session) -> None:
    from pytest_sabot.report.terminal import summary_text

    results = lab_slice.results
    assert results.lab_gates is not None
    for width in (80, 200):
        lines = summary_text(results, width)
        assert max(len(line) for line in lines) <= width, (width, lines)
        head = lines.index(next(line for line in lines if line.startswith("lab gate beside")))
        table = lines[head:]
        assert any(line.startswith("row ") and "gate pass [95% CI]" in line for line in table)
        rows = [line for line in table if line.startswith("langgraph-default ")]
        assert len(rows) == 1 + 2  # the baseline, O8 and O10 of the slice
    wide = summary_text(results, 200)
    assert any("funnel" in line and line.startswith("row ") for line in wide)


def test_L_each_cell_records_the_gate_and_the_funnel_apart(lab_slice: Session) -> None:
    results = lab_slice.results
    assert results.lab_gates is not None
    verdicts = {c.cell_id: c for c in results.cells}
    gated = [cell for rate in results.lab_gates.by_row for cell in rate.cells]
    assert sorted(c.cell_id for c in gated) == sorted(verdicts)  # nothing dropped
    for cell in gated:
        run = json.loads((lab_slice.out / "cells" / cell.cell_id / "run.json").read_text())
        assert run["gate"]["outcome"] == cell.gate
        kinds = {json.loads(line)["kind"] for line in
                 (lab_slice.out / "cells" / cell.cell_id / "events.jsonl").read_text()
                 .splitlines()}
        assert not kinds & {"delivery", "effect", "committed"}  # the lab's streams stay out
    by_fault = {r.fault: r for r in results.lab_gates.by_fault}
    assert by_fault["baseline"].outcomes["pass"] == by_fault["baseline"].runs == 6
    # realistic, seed 11: a lost creation is retried with a fresh key, a duplicate ticket
    o8 = by_fault["O8"]
    assert o8.runs == 6 and o8.outcomes["fail"] == 6 and o8.passed == 0
    assert all("LS1" in c.rules_broken for c in o8.cells)
    assert o8.ci_low is not None and o8.ci_low < 1e-9
    assert o8.ci_high is not None and 0.3 < o8.ci_high < 0.5  # Wilson, 0 of 6
    # The funnel is scored independently of the gate: O8 is noticed in most rows.
    assert any(c.funnel.startswith("DETECTED_HARD") for c in o8.cells)


def test_L_results_md_lists_every_cell_with_gate_and_funnel(lab_slice: Session) -> None:
    text = (lab_slice.out / "RESULTS.md").read_text()
    assert "## Lab gate beside the Sabot funnel" in text
    results = lab_slice.results
    for cell in results.cells:
        assert f"`{cell.cell_id}`" in text


def test_L_a_cell_without_its_lab_record_stays_in_the_denominator(
    lab_slice: Session, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(lab_slice.out, out)
    gone = "crewai-guardrail-O8-T6-s11"
    (out / "cells" / gone / "run.json").unlink()
    std = load_standard("lab")
    rebuilt = build_results(std, out, selected_ids=lab_slice.results.selection.cell_ids,
                            model="sim:realistic")
    assert rebuilt.lab_gates is not None
    rate = next(r for r in rebuilt.lab_gates.by_row
                if r.row == "crewai-guardrail" and r.fault == "O8")
    assert rate.runs == 1 and rate.passed == 0 and rate.outcomes["no record"] == 1
    overall = next(r for r in rebuilt.lab_gates.by_fault if r.fault == "O8")
    assert overall.runs == 6 and overall.outcomes["no record"] == 1


def test_L_inspect_of_a_lab_matrix_cell_shows_its_sabot_verdict_and_its_lab_gate(
    lab_slice: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_sabot.commands.cli import main

    cell = next(c for c in lab_slice.results.cells if c.cell_id.split("-")[2] != "baseline")
    folder = lab_slice.out / "cells" / cell.cell_id
    run = json.loads((folder / "run.json").read_text())
    assert main(["inspect", str(folder)]) == 0
    text = capsys.readouterr().out
    assert f"cell {cell.cell_id} " in text and "verdict: " in text  # the Sabot funnel
    assert f"gate: {run['gate']['outcome']}" in text  # then the lab run's gate
    assert main(["inspect", str(folder), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["cell_id"] == cell.cell_id and body["lab"]["gate"] == run["gate"]["outcome"]
