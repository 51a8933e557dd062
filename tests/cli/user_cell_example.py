"""One cell of my own choosing, run and checked inside an ordinary pytest test."""

from pathlib import Path

from pytest_sabot.harness.run import RunSettings, run_cell
from pytest_sabot.results.adjudicate import score_recorded


def test_langgraph_guardrail_catches_a_tool_lie(sabot_standard, sabot_gateway, tmp_path: Path):
    std = sabot_standard                              # the wave given by --sabot-wave
    cell = std.cell("langgraph-guardrail-O1-T1-s11")  # any registered cell id
    baseline = std.cell(cell.baseline_id)             # its no-fault pair (validity, S3.1)
    settings = RunSettings(
        root=std.root,
        out_dir=tmp_path,                 # traces go to tmp_path/cells/<cell id>/
        gateway_url=sabot_gateway.url,    # the session's gateway (keyless unless live)
        model="sim:vigilant",             # a persona of the embedded model
    )
    for each in (baseline, cell):
        outcome = run_cell(each, std.wave, settings, sabot_gateway)
        assert outcome.error is None, outcome.error

    base_verdict, verdict = score_recorded(std, tmp_path, [baseline, cell])
    assert base_verdict.status == "passed"
    assert verdict.excluded is None
    assert verdict.detection == "DETECTED_HARD"
    assert verdict.reacted and verdict.recovered
    assert "reject-reviewer" in {act.row for act in verdict.acts}
