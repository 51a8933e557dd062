"""Issue 9.3: the exit status tells the truth (SPEC I48).

pytest runs keep pytest's exit codes: 0 every selected cell recorded and every gate
passed; 1 a gate failed (fail-under, a row without a valid cell, a missing baseline, the
RUN_ERROR share) or a harness error; 2 the selection was not recorded in full
(interrupted, budget, unwritable output); 4 a usage error, before any cell. The ``sabot``
commands use 0 pass, 1 gate or regression, 2 configuration/corruption/harness error,
3 inconclusive.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from plugin_runs import BASELINE, SLICE, Run, copy_out, run, shared, shared_dir

from pytest_sabot.commands.cli import main
from pytest_sabot.core.paths import standard_root
from pytest_sabot.matrix.standard import load_standard
from pytest_sabot.results import build_results
from pytest_sabot.results.adjudicate import set_aside
from pytest_sabot.session.gates import BASELINES, RUN_ERRORS, evaluate, failures

# Each test runs whole pytest sessions of real pipelines (seconds each).
pytestmark = pytest.mark.slow

TWO = [*SLICE, "--sabot-operator=baseline,O1", "-p", "no:xdist"]


@pytest.fixture(scope="module")
def recorded(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Run:
    where = shared_dir(pytestconfig, tmp_path_factory, "sabot-exit-recorded")
    return shared(where, "--sabot-wave=1", *TWO)


def test_9_3_an_invalid_model_exits_non_zero_before_any_cell(tmp_path: Path) -> None:
    session = run(tmp_path, "--sabot-wave=1", "--sabot-model=sim:paranoid",
                  "--sabot-fail-under=0.5")
    assert session.returncode == pytest.ExitCode.USAGE_ERROR, session.describe()
    assert "unknown embedded-model persona 'paranoid'" in session.stderr
    assert "Traceback" not in session.stderr + session.stdout
    assert not session.out.exists()


def test_9_3_a_wave_of_run_errors_never_exits_0(tmp_path: Path) -> None:
    every = run(tmp_path / "a", "--sabot-wave=1", *TWO, "--sabot-timeout=0.001",
                "--sabot-fail-under=0.5")
    assert every.returncode == pytest.ExitCode.TESTS_FAILED, every.describe()
    assert "gate failed: 1 of 2 recorded cells are RUN_ERROR (50.0%)" in every.stdout
    assert "gate failed: row langgraph-default has no valid fault cell" in every.stdout
    assert "FAILED sabot::gate[run-errors]" in every.stdout
    assert "FAILED sabot::gate[langgraph-default]" in every.stdout


def test_9_3_the_run_error_share_has_a_documented_threshold(tmp_path: Path) -> None:
    allowed = run(tmp_path / "b", "--sabot-wave=1", *TWO, "--sabot-timeout=0.001",
                  "--sabot-max-run-errors=1")
    assert allowed.returncode == 0, allowed.describe()
    usage = (Path(__file__).parents[2] / "docs" / "USAGE.md").read_text()
    assert "--sabot-max-run-errors" in usage and "5%" in usage


def test_9_3_a_gate_fails_when_a_baseline_it_needs_is_missing(
    recorded: Run, tmp_path: Path
) -> None:
    assert recorded.returncode == 0, recorded.describe()
    out = copy_out(recorded, tmp_path)
    std = load_standard(1)
    set_aside(out, std.cell(BASELINE), "lost for the test")
    results = build_results(std, out, selected_ids=["langgraph-default-O1-T1-s11"],
                            model="sim:realistic")
    gates = {g.name: g for g in evaluate(results, 0.0, 0.05)}
    assert not gates[BASELINES].passed
    assert "no usable baseline" in gates[BASELINES].message
    assert not gates["langgraph-default"].passed  # and the row has no valid cell left
    assert gates[RUN_ERRORS].passed
    assert {g.name for g in failures(list(gates.values()))} == {BASELINES, "langgraph-default"}


def test_9_3_gates_pass_and_exit_0_when_the_rows_clear_the_threshold(
    recorded: Run, tmp_path: Path
) -> None:
    out = copy_out(recorded, tmp_path)
    passing = run(tmp_path, "--sabot-wave=1", *TWO, "--sabot-resume", "--sabot-fail-under=0",
                  out=out)
    assert passing.returncode == 0, passing.describe()
    # the gates (run errors, the row, its baselines) are results of their own
    assert "3 passed" in passing.stdout


def test_9_3_sabot_commands_use_the_standard_four_exit_codes(
    recorded: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = copy_out(recorded, tmp_path)
    assert main(["rescore", str(out)]) == 0
    outcome = out / "cells" / "langgraph-default-O1-T1-s11" / "outcome.json"
    data = json.loads(outcome.read_text())
    data["passed"] = not data["passed"]
    outcome.write_text(json.dumps(data))
    assert main(["rescore", str(out)]) == 1  # a regression: the records say otherwise now
    (out / "results.json").write_text("{ not json")
    assert main(["rescore", str(out)]) == 2
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    broken = tmp_path / "root"
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(standard_root() / folder, broken / folder)
    (broken / "cells" / "wave1.yaml").write_text("wave: [")
    assert main(["validate", str(broken)]) == 2
    assert main(["plan", "--sabot-wave", "1", "--sabot-model", "openai:gpt-5.6-terra",
                 "--sabot-budget-usd", "0.01"]) == 1
    capsys.readouterr()
    # a live model with no price cannot be budgeted: said, and "do not run" as over the cap
    assert main(["plan", "--sabot-wave", "1", "--sabot-model", "openai:my-own-model"]) == 1
    assert "NO PRICE for openai:my-own-model" in capsys.readouterr().out
    prices = tmp_path / "prices.yaml"
    prices.write_text("version: 1\nmodels:\n  my-own-model: {input: 1.0, cached_input: 0.1, "
                      "output: 4.0, max_output_tokens: 8000}\n")
    assert main(["plan", "--sabot-wave", "1", "--sabot-model", "openai:my-own-model",
                 "--sabot-prices", str(prices)]) == 0
    with pytest.raises(SystemExit) as refused:
        main(["plan", "--sabot-wave", "1", "--sabot-budget-usd", "-3"])
    assert refused.value.code == 2
    assert "above 0" in capsys.readouterr().err
