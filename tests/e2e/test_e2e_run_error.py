"""S3.2 RUN_ERROR on real runs: an infrastructure failure is retried once, the first
attempt's files are kept, and the cell is scored RUN_ERROR with the error text, never
dropped. The trace of such a run also meets the conditions of the lower codes (its fault
never landed, and here its baseline failed too), and RUN_ERROR still wins."""

from __future__ import annotations

from pathlib import Path

from e2e_bank import SEED, VIGILANT, CellBank, refused_url, require_adapter

from pytest_sabot.core.models.cells import cell_id
from pytest_sabot.core.records import cell_dir
from pytest_sabot.core.trace_io import read_trace
from pytest_sabot.harness.run import RunSettings, run_cell
from pytest_sabot.matrix.standard import Standard
from pytest_sabot.results.adjudicate import is_finished, score_baseline_dir, score_fault_dir

CELL = cell_id("langgraph", "default", "O1", "T1", SEED)


def _assert_retried_and_kept(std: Standard, out: Path, cell: str, error_text: str) -> None:
    run_dir = cell_dir(out, cell)
    first, second = read_trace(run_dir / "attempt-1"), read_trace(run_dir)
    assert (first.start.attempt, second.start.attempt) == (1, 2)
    for trace in (first, second):
        errors = trace.of_kind("run_error")
        assert len(errors) == 1 and error_text in errors[0].data.message
        assert trace.events[-1].kind == "run_end"
        assert trace.events[-1].data.status in ("error", "timeout")
    assert is_finished(out, std.cell(cell))


def test_S3_2_unreachable_model_is_retried_once_and_scored_run_error(
    wave1: Standard, tmp_path: Path
) -> None:
    require_adapter("langgraph")
    settings = RunSettings(
        root=wave1.root, out_dir=tmp_path, gateway_url=refused_url(), model=VIGILANT
    )
    outcome = run_cell(wave1.cell(CELL), wave1.wave, settings)
    assert outcome.attempts == 2
    assert outcome.error is not None and "refused" in outcome.error.lower()
    _assert_retried_and_kept(wave1, tmp_path, CELL, "refused")

    run_dir = cell_dir(tmp_path, CELL)
    trace = read_trace(run_dir)
    probe = trace.of_kind("probe")[0].data
    assert probe.landed is False  # INJECTION_UNVERIFIED would apply on its own
    for baseline in ("failed", "passed", None):
        verdict = score_fault_dir(wave1, wave1.cell(CELL), run_dir, baseline)
        assert verdict.excluded is not None
        assert verdict.excluded.code == "RUN_ERROR", (baseline, verdict.excluded)
        assert "refused" in verdict.excluded.reason.lower()


def test_S3_2_pipeline_timeout_is_a_run_error_of_that_cell(
    bank: CellBank, wave1: Standard, tmp_path: Path
) -> None:
    require_adapter("crewai")
    # The session's own gateway serves; only the per-cell timeout is too short for any
    # pipeline to finish.
    settings = RunSettings(
        root=wave1.root,
        out_dir=tmp_path,
        gateway_url=bank.gateway_url,
        model=VIGILANT,
        timeout_s=0.001,
    )
    baseline = cell_id("crewai", "default", None, "T1", SEED)
    outcome = run_cell(wave1.cell(baseline), wave1.wave, settings)
    assert outcome.attempts == 2 and outcome.error is not None
    assert outcome.error.startswith("Timeout")
    _assert_retried_and_kept(wave1, tmp_path, baseline, "Timeout")
    verdict = score_baseline_dir(wave1, cell_dir(tmp_path, baseline))
    assert verdict.status == "RUN_ERROR" and "Timeout" in verdict.reason
