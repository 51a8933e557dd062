"""``sabot compare``: paired comparison of two scored runs (standard S10.5.3, S3.3, I10).

Two small runs are recorded once per module with ``run_cell`` against a keyless gateway:
LangGraph T1, seed 11, wave 3, under ``sim:credulous`` (A) and ``sim:realistic`` (B).
Five fault cells run in both; A alone has guardrail-O2 and B alone default-O3, so the
comparison has cells valid in one run only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_sabot.commands.cli import main
from pytest_sabot.commands.compare import render_text
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.models.verdict import CellVerdict, Exclusion
from pytest_sabot.results import ResultsFile
from pytest_sabot.results.compare import compare, load_side

BOTH = [
    "langgraph-default-baseline-T1-s11",
    "langgraph-guardrail-baseline-T1-s11",
    "langgraph-default-O1-T1-s11",
    "langgraph-default-O6-T1-s11",
    "langgraph-guardrail-O1-T1-s11",
    "langgraph-guardrail-O3-T1-s11",
    "langgraph-guardrail-O6-T1-s11",
]
A_ONLY = "langgraph-guardrail-O2-T1-s11"
B_ONLY = "langgraph-default-O3-T1-s11"


@dataclass(frozen=True)
class Runs:
    a_dir: Path
    b_dir: Path
    a: ResultsFile
    b: ResultsFile


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    from pytest_sabot.gateway import start_gateway
    from pytest_sabot.harness.run import RunSettings, run_cell
    from pytest_sabot.matrix.standard import load_standard
    from pytest_sabot.results import build_results, write_results

    std = load_standard(3)
    base = tmp_path_factory.mktemp("compare")
    made: dict[str, tuple[Path, ResultsFile]] = {}
    with start_gateway() as gateway:
        for name, model, extra in (("a", "sim:credulous", A_ONLY), ("b", "sim:realistic", B_ONLY)):
            out = base / name
            settings = RunSettings(root=std.root, out_dir=out, gateway_url=gateway.url, model=model)
            ids = [*BOTH, extra]
            for cell_id in ids:
                run_cell(std.cell(cell_id), std.wave, settings)
            results = build_results(std, out, selected_ids=ids, model=model)
            write_results(results, out)
            made[name] = (out, results)
    yield Runs(made["a"][0], made["b"][0], made["a"][1], made["b"][1])


def _faults(results: ResultsFile) -> dict[str, CellVerdict]:
    return {c.cell_id: c for c in results.cells if isinstance(c, CellVerdict)}


def _with_cell(results: ResultsFile, cell_id: str, **changes: object) -> ResultsFile:
    cells = [c.model_copy(update=changes) if c.cell_id == cell_id else c for c in results.cells]
    return results.model_copy(update={"cells": cells})


@pytest.mark.slow
def test_S10_5_3_cells_pair_by_framework_config_operator_task_seed(runs: Runs) -> None:
    fa, fb = _faults(runs.a), _faults(runs.b)
    paired_ids = {i for i in fa.keys() & fb.keys() if fa[i].valid and fb[i].valid}
    report = compare(runs.a, runs.b)
    assert report.paired == len(paired_ids) == 5
    assert sum(r.paired for r in report.rows) == report.paired
    assert {r.row for r in report.rows} == {"langgraph-default", "langgraph-guardrail"}


@pytest.mark.slow
def test_S10_5_3_flips_count_cells_detected_in_one_run_only(runs: Runs) -> None:
    fa, fb = _faults(runs.a), _faults(runs.b)
    both = [i for i in fa.keys() & fb.keys() if fa[i].valid and fb[i].valid]
    b_only = sum(1 for i in both if fb[i].detected_hard and not fa[i].detected_hard)
    a_only = sum(1 for i in both if fa[i].detected_hard and not fb[i].detected_hard)
    report = compare(runs.a, runs.b)
    assert (report.detected_a_only, report.detected_b_only) == (a_only, b_only)
    assert 0 < b_only < len(both)  # the pairs disagree on some cells and agree on others
    flipped_rows = {r.row: r.detected_b_only for r in report.rows}
    assert sum(flipped_rows.values()) == b_only


@pytest.mark.slow
def test_S10_5_3_row_difference_is_the_paired_mean_of_b_minus_a(runs: Runs) -> None:
    fa, fb = _faults(runs.a), _faults(runs.b)
    for row in compare(runs.a, runs.b).rows:
        ids = [
            i
            for i in fa.keys() & fb.keys()
            if fa[i].row == row.row and fa[i].valid and fb[i].valid
        ]
        diffs = [int(fb[i].detected_hard) - int(fa[i].detected_hard) for i in ids]
        assert row.difference == pytest.approx(sum(diffs) / len(diffs))
        assert row.ci_low is not None and row.ci_high is not None
        assert row.ci_low <= row.difference <= row.ci_high


@pytest.mark.slow
def test_S10_5_3_published_row_scores_sit_beside_the_paired_difference(runs: Runs) -> None:
    report = compare(runs.a, runs.b)
    for row in report.rows:
        published_a = next(r.sabot_score for r in runs.a.scoreboard.rows if r.row == row.row)
        published_b = next(r.sabot_score for r in runs.b.scoreboard.rows if r.row == row.row)
        assert (row.a, row.b) == (published_a, published_b)


@pytest.mark.slow
def test_paired_bootstrap_interval_is_deterministic_from_its_seed(runs: Runs) -> None:
    first = compare(runs.a, runs.b, resamples=2000, seed=7)
    again = compare(runs.a, runs.b, resamples=2000, seed=7)
    assert first == again
    # a non-degenerate interval, so the seed matters to it and only to it
    assert any(r.ci_low != r.ci_high for r in first.rows)
    other = compare(runs.a, runs.b, resamples=2000, seed=8)
    assert [r.difference for r in other.rows] == [r.difference for r in first.rows]


@pytest.mark.slow
def test_cli_compare_prints_the_same_ci_twice(
    runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["compare", str(runs.a_dir), str(runs.b_dir), "--json", "--resamples", "1000"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert main(args) == 0
    assert capsys.readouterr().out == first


@pytest.mark.slow
def test_S3_3_cells_valid_in_one_run_only_are_listed_never_dropped(
    runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    report = compare(runs.a, runs.b)
    listed = {(c.cell_id, c.valid_in, c.other) for c in report.one_sided}
    assert listed == {(A_ONLY, "A", "not recorded"), (B_ONLY, "B", "not recorded")}
    assert {r.row: r.one_sided for r in report.rows} == {
        "langgraph-default": 1,
        "langgraph-guardrail": 1,
    }
    assert main(["compare", str(runs.a_dir), str(runs.b_dir), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "cells valid in one run only (2):" in out
    assert A_ONLY in out and B_ONLY in out


@pytest.mark.slow
def test_S3_3_a_cell_excluded_in_one_run_is_listed_with_its_code(runs: Runs) -> None:
    excluded = Exclusion(code="RUN_ERROR", reason="Timeout: the pipeline ran past 300s")
    b = _with_cell(runs.b, "langgraph-guardrail-O1-T1-s11", excluded=excluded)
    report = compare(runs.a, b, resamples=200)
    assert report.paired == 4
    assert (
        "langgraph-guardrail-O1-T1-s11",
        "A",
        "excluded: RUN_ERROR",
    ) in {(c.cell_id, c.valid_in, c.other) for c in report.one_sided}


@pytest.mark.slow
def test_compare_warns_about_model_rules_and_registration(runs: Runs) -> None:
    report = compare(runs.a, runs.b)
    assert [(m.field, m.a, m.b) for m in report.mismatches] == [
        ("model", "sim:credulous", "sim:realistic")
    ]
    b = runs.b.model_copy(update={"rules": "v0.2.0", "registration_hash": "0" * 64})
    fields = [m.field for m in compare(runs.a, b, resamples=100).mismatches]
    assert fields == ["registration_hash", "rules", "model"]
    text = "\n".join(render_text(compare(runs.a, b, resamples=100)))
    assert "warning: A and B differ in rules" in text and "A v0.2.1, B v0.2.0" in text
    assert "warning: A and B differ in registration_hash" in text
    assert "warning: A and B differ in model" in text


@pytest.mark.slow
def test_compare_of_a_run_with_itself_has_no_warning_and_no_flip(runs: Runs) -> None:
    report = compare(runs.a, runs.a, resamples=100)
    assert report.mismatches == []
    assert report.one_sided == []
    assert report.detected_a_only == report.detected_b_only == 0
    assert all(r.difference == 0 and r.ci_low == r.ci_high == 0 for r in report.rows)


@pytest.mark.slow
def test_I10_keyless_inputs_are_labelled_fixtures(runs: Runs) -> None:
    report = compare(runs.a, runs.b, resamples=100)
    assert report.a.fixture and report.b.fixture
    text = "\n".join(render_text(report))
    assert "fixtures of the embedded model (sim:credulous), not a measurement" in text
    assert "A and B are keyless" in text


@pytest.mark.slow
def test_cli_compare_json_is_the_comparison(
    runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(runs.a_dir), str(runs.b_dir), "--json", "--resamples", "300"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = compare(
        runs.a, runs.b, a_path=str(runs.a_dir), b_path=str(runs.b_dir), resamples=300
    )
    assert printed == expected.model_dump(mode="json")


@pytest.mark.slow
def test_cli_compare_exits_2_naming_a_missing_results_file(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(tmp_path), str(runs.b_dir)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "results.json") in err
    assert "expected a results.json" in err


@pytest.mark.slow
def test_cli_compare_exits_2_naming_the_invalid_field(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads((runs.a_dir / "results.json").read_text())
    data["wave"] = "three"
    (tmp_path / "results.json").write_text(json.dumps(data))
    assert main(["compare", str(runs.a_dir), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "results.json") in err
    assert "field 'wave'" in err


def test_cli_compare_and_export_refuse_another_versions_results_format(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads((runs.a_dir / "results.json").read_text())
    data["schema_version"] = "99"
    (tmp_path / "results.json").write_text(json.dumps(data))
    for argv in (["compare", str(runs.a_dir), str(tmp_path)],
                 ["export", str(tmp_path), "--format", "json"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert str(tmp_path / "results.json") in err and "field 'schema_version'" in err


def test_cli_compare_exits_2_on_a_file_that_is_not_json(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text("{ not json")
    with pytest.raises(SabotDataError) as info:
        load_side(tmp_path)
    assert info.value.file == str(tmp_path / "results.json")
    assert main(["compare", str(tmp_path), str(tmp_path)]) == 2


def test_cli_compare_help_states_the_bootstrap_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pytest_sabot.results.compare import DEFAULT_RESAMPLES, DEFAULT_SEED

    with pytest.raises(SystemExit) as info:
        main(["compare", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert f"default {DEFAULT_RESAMPLES}" in out and f"default {DEFAULT_SEED}" in out


@pytest.mark.slow
def test_cli_compare_exits_2_on_zero_resamples(
    runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(runs.a_dir), str(runs.b_dir), "--resamples", "0"]) == 2
    assert "--resamples must be at least 1" in capsys.readouterr().err


@pytest.mark.slow
def test_S10_8_I28_predictions_are_evaluated_for_a_wave2_run_against_its_wave1_run(
    runs: Runs,
) -> None:
    wave1, wave2 = runs.a.model_copy(update={"wave": 1}), runs.b.model_copy(update={"wave": 2})
    for a, b, note in ((wave1, wave2, "A is the wave-1 run"), (wave2, wave1, "B is the wave-1")):
        c = compare(a, b, resamples=200)
        assert c.predictions is not None and note in c.predictions_note
        assert [p.id for p in c.predictions] == ["P1", "P2", "P3", "P4", "P5"]
        lines = render_text(c)
        for p in c.predictions:
            shown = next(line for line in lines if line.startswith(f"  {p.id}  "))
            assert p.status.upper() in shown and p.statement in shown
        assert any("fixtures of the embedded model" in line for line in lines)


@pytest.mark.slow
def test_S10_8_I28_predictions_are_not_evaluated_between_other_waves(runs: Runs) -> None:
    c = compare(runs.a, runs.b, resamples=200)
    assert c.predictions is None
    assert any(line.startswith("  not evaluated:") for line in render_text(c))


@pytest.mark.slow
def test_I27_compare_shows_each_rows_clean_run_firing_beside_its_score(runs: Runs) -> None:
    c = compare(runs.a, runs.b, resamples=200)
    lines = render_text(c)
    head = next(i for i, line in enumerate(lines) if line.startswith("clean-run firing"))
    assert "fixture numbers of the embedded model" in lines[head]
    rows = {line.split()[0] for line in lines[head + 2 : head + 2 + len(c.rows)]}
    assert rows == {r.row for r in c.rows}
    assert all(r.a_clean_fire is not None and r.b_clean_fire is not None for r in c.rows)


@pytest.mark.slow
def test_issue22_11_sabot_compare_of_a_wave1_and_a_wave2_run_reads_only_their_mappings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """README's ``sabot compare reports/wave-1 reports/wave-2``: the candidate row
    agent-framework has no mapping revision at the wave-2 rules, and a comparison of the
    shipped rows never asks for one."""
    from pytest_sabot.gateway import start_gateway
    from pytest_sabot.harness.run import RunSettings, run_cell
    from pytest_sabot.matrix.standard import load_standard
    from pytest_sabot.results import build_results, write_results
    from pytest_sabot.results.compare import reviewer_rows

    ids = ["langgraph-default-baseline-T1-s11", "langgraph-default-O1-T1-s11"]
    dirs = []
    with start_gateway() as gateway:
        for wave in (1, 2):
            std = load_standard(wave)
            out = tmp_path / "reports" / f"wave-{wave}"
            settings = RunSettings(root=std.root, out_dir=out, gateway_url=gateway.url,
                                   model="sim:realistic")
            for cell_id in ids:
                run_cell(std.cell(cell_id), std.wave, settings)
            write_results(build_results(std, out, selected_ids=ids, model="sim:realistic"), out)
            dirs.append(out)
    wave2_rules = load_standard(2).rules.version
    with pytest.raises(KeyError, match="agent_framework"):
        reviewer_rows(wave2_rules)  # every mapping: the candidate's has no such revision
    assert "langgraph-guardrail" in reviewer_rows(wave2_rules, frameworks={"langgraph"})
    capsys.readouterr()
    assert main(["compare", str(dirs[0]), str(dirs[1]), "--resamples", "200"]) == 0
    printed = capsys.readouterr()
    assert "no mapping revision" not in printed.out + printed.err
    assert "P1" in printed.out  # a wave-2 run against its wave-1 run: the predictions
