"""The pytest plugin, exercised the way users run it (pytester, in-process and with xdist).

Runs real cells of the embedded model on LangGraph's T1 slice: seven cells, baselines
first, so the whole file stays a few tens of seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_sabot.results import ResultsFile

# Each test runs whole pytest sessions of real pipelines (seconds each).
pytestmark = pytest.mark.slow

SLICE = [
    "--sabot-framework=langgraph",
    "--sabot-config=default",
    "--sabot-task=T1",
    "--sabot-seed=11",
    "-p",
    "no:cacheprovider",
]
CATEGORIES = {
    "baseline_pass",
    "baseline_failed",
    "detected_hard",
    "detected_soft",
    "missed",
    "run_error",
    "baseline_fail",
    "injection_unverified",
}


def _results(path: Path) -> ResultsFile:
    return ResultsFile.model_validate_json((path / "results.json").read_text())


def _verdicts(results: ResultsFile) -> dict[str, dict[str, object]]:
    """Per cell, the fields that must not depend on how the wave was run."""
    out: dict[str, dict[str, object]] = {}
    for cell in results.cells:
        data = cell.model_dump(mode="json")
        out[cell.cell_id] = data
    return out


def test_collection_one_item_per_registered_cell_with_readable_ids(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest("--sabot-wave=1", "--collect-only", "-q", "-p", "no:cacheprovider")
    lines = [x for x in result.outlines if "test_cell[" in x]
    assert len(lines) == 1050
    assert lines[0].endswith("test_cell[langgraph-default-baseline-T1-s11]")
    assert any(x.endswith("test_cell[langgraph-guardrail-O3-T2-s11]") for x in lines)
    assert any(x.endswith("test_cell[crewai-default-baseline-T4-s13]") for x in lines)
    first_fault = next(i for i, x in enumerate(lines) if "baseline" not in x)
    assert all("baseline" in x for x in lines[:first_fault])  # baselines first
    assert first_fault == 150


def test_collection_order_is_deterministic(pytester: pytest.Pytester) -> None:
    a = pytester.runpytest("--sabot-wave=2", "--collect-only", "-q", "-p", "no:cacheprovider")
    b = pytester.runpytest("--sabot-wave=2", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert [x for x in a.outlines if "test_cell[" in x] == [
        x for x in b.outlines if "test_cell[" in x
    ]


def test_marker_selects_operator_exactly(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--sabot-wave=1",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "sabot_cell(operator='O3')",
    )
    lines = [x for x in result.outlines if "test_cell[" in x]
    assert len(lines) == 150
    assert all("-O3-" in x for x in lines)


def test_keyword_selection_works_as_pytest_users_expect(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--sabot-wave=2", "--collect-only", "-q", "-p", "no:cacheprovider", "-k", "crewai and O3"
    )
    lines = [x for x in result.outlines if "test_cell[" in x]
    assert len(lines) == 50
    assert all("crewai" in x and "O3" in x for x in lines)


def test_narrowing_options_filter_the_matrix(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--sabot-wave=1", "--collect-only", "-q", *SLICE)
    lines = [x for x in result.outlines if "test_cell[" in x]
    assert len(lines) == 7


def test_unknown_wave_is_a_usage_error_naming_the_file(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--sabot-wave=9", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pytest-sabot*wave*"])


def test_unknown_filter_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--sabot-wave=1", "--sabot-operator=O9", "--collect-only", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*operator*O9*"])


def test_carve_out_cells_are_reported_as_registered_structural_zeros(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest(
        "--sabot-wave=2",
        "--sabot-framework=autogen",
        "--sabot-config=guardrail",
        "--sabot-operator=O2",
        "--sabot-task=T1",
        "-p",
        "no:cacheprovider",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("structural_zero") == 5
    assert result.ret == 0
    results = _results(pytester.path / "reports" / "wave-2")
    assert len(results.structural_zeros) == 5  # the selected carve-out cells, none run


@pytest.fixture(scope="module")
def serial_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The slice run once without xdist (subprocess, like a user at a terminal)."""
    work = tmp_path_factory.mktemp("serial")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--sabot-wave=1",
            *SLICE,
            "-p",
            "no:xdist",
            "-rA",
            f"--junitxml={work / 'junit.xml'}",
            "--sabot-out",
            str(work / "out"),
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return work, proc


def test_every_cell_gets_a_custom_outcome_and_the_session_passes(
    serial_run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    _work, proc = serial_run
    assert proc.returncode == 0, proc.stdout[-3000:]
    summary = proc.stdout.strip().splitlines()[-1]
    counted = {
        part.split()[1]
        for part in summary.strip("= ").split(" in ")[0].split(", ")
        if part.split()[0].isdigit()
    }
    assert counted <= CATEGORIES | {"warning", "warnings"}
    assert "baseline_pass" in counted
    assert "Sabot scoreboard: wave 1, rules v0.1.3" in proc.stdout
    assert "not a measurement of any LLM" in " ".join(proc.stdout.split())  # wrapped at 80
    assert "Exclusion appendix" in proc.stdout


def test_results_json_validates_and_names_rules_and_registration(
    serial_run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    work, _ = serial_run
    results = _results(work / "out")
    assert results.rules == "v0.1.3" and results.wave == 1
    assert results.fixture is True
    assert len(results.registration_hash) == 64
    assert {c.cell_id for c in results.cells} == {
        f"langgraph-default-{op}-T1-s11" for op in ("baseline", "O1", "O2", "O3", "O4", "O5", "O6")
    }
    assert (work / "out" / "RESULTS.md").read_text().startswith("# Sabot results: wave 1")
    for cell in results.cells:
        assert (work / "out" / "cells" / cell.cell_id / "events.jsonl").is_file()


def test_xdist_run_gives_the_same_verdicts_as_a_serial_run(
    serial_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    work, _ = serial_run
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--sabot-wave=1",
            *SLICE,
            "-n",
            "2",
            "--sabot-out",
            str(tmp_path / "out"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert _verdicts(_results(tmp_path / "out")) == _verdicts(_results(work / "out"))


def test_fail_under_fails_the_session_and_names_the_row(
    serial_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    work, _ = serial_run
    # Reuse the recorded slice (resume) so this costs no new runs.
    out = tmp_path / "out"
    subprocess.run(["cp", "-r", str(work / "out"), str(out)], check=True)
    args = [
        sys.executable,
        "-m",
        "pytest",
        "--sabot-wave=1",
        *SLICE,
        "-p",
        "no:xdist",
        "--sabot-resume",
        "--sabot-out",
        str(out),
    ]
    failing = subprocess.run(
        [*args, "--sabot-fail-under=1.0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert failing.returncode == 1
    assert "gate failed: row langgraph-default" in failing.stdout
    passing = subprocess.run(
        [*args, "--sabot-fail-under=0"], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert passing.returncode == 0


def test_resume_after_kill_gives_the_results_of_an_uninterrupted_run(
    serial_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    work, _ = serial_run
    out = tmp_path / "out"
    args = [
        sys.executable,
        "-m",
        "pytest",
        "--sabot-wave=1",
        *SLICE,
        "-p",
        "no:xdist",
        "--sabot-out",
        str(out),
    ]
    proc = subprocess.Popen(
        args,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    cells = out / "cells"
    while time.monotonic() < deadline:
        done = list(cells.glob("*/outcome.json")) if cells.exists() else []
        if len(done) >= 3:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished_before = {p.parent.name for p in cells.glob("*/outcome.json")}
    assert 3 <= len(finished_before) < 7
    stamps = {c: (cells / c / "outcome.json").stat().st_mtime_ns for c in finished_before}
    resumed = subprocess.run(
        [*args, "--sabot-resume"], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    for c in finished_before:  # finished cells were not re-run
        assert (cells / c / "outcome.json").stat().st_mtime_ns == stamps[c]
    assert _verdicts(_results(out)) == _verdicts(_results(work / "out"))


def test_rescore_reproduces_results_json_exactly(
    serial_run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    from pytest_sabot.commands.cli import main

    work, _ = serial_run
    assert main(["rescore", str(work / "out")]) == 0


def test_rescore_under_another_rule_version_prints_both_readings(
    serial_run: tuple[Path, subprocess.CompletedProcess[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_sabot.commands.cli import main

    work, _ = serial_run
    assert main(["rescore", str(work / "out"), "--rules", "v0.2.1"]) == 0
    out = capsys.readouterr().out
    assert "v0.1.3" in out and "v0.2.1" in out and "langgraph-default" in out
    data = json.loads((work / "out" / "results.json").read_text())
    assert data["rules"] == "v0.1.3"  # the recorded results are never overwritten
