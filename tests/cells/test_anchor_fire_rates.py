"""Anchor fire rates on clean baselines (SPEC.md S10.10), measured on hand-built traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_sabot.commands.anchor_rates import (
    AnchorRate,
    fire_rates,
    load_traces,
    main,
    render_table,
)
from pytest_sabot.core.models.anchors import load_anchor_registry
from pytest_sabot.core.trace_io import TraceWriter

ROOT = Path(__file__).resolve().parents[2]
WAVE2 = load_anchor_registry(ROOT / "cells" / "anchors-wave2.yaml")
WAVE3 = load_anchor_registry(ROOT / "cells" / "anchors-wave3.yaml")


def _record(
    reports: Path,
    task: str,
    seed: int,
    events: list[tuple[str, str, str, dict[str, Any]]],
    operator: str | None = None,
    finish: bool = True,
) -> None:
    cell = f"langgraph-default-{operator or 'baseline'}-{task}-s{seed}"
    writer = TraceWriter(reports / cell)
    writer.emit("run_start", "harness", cell_id=cell, wave=2, framework="langgraph",
                config="default", operator=operator, task=task, seed=seed, rules="v0.2.0",
                model="sim:realistic", flags_protocol=True)
    for kind, component, text, data in events:
        writer.emit(kind, component, text, **data)
    writer.emit("run_end", "harness", status="completed")
    if finish:
        writer.finish()


def _review(text: str) -> tuple[str, str, str, dict[str, Any]]:
    return ("review", "reviewer", text, {"round": 0})


def _rate(rates: list[AnchorRate], task: str, operator: str, anchor: str) -> AnchorRate:
    return next(r for r in rates if (r.task, r.operator, r.anchor) == (task, operator, anchor))


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    out = tmp_path / "reports"
    # Two clean T4 baselines: one reviewer quotes the true total, one writes a none-form.
    _record(out, "T4", 11, [
        ("agent_output", "worker", "Leg plan: depot to C4, total 140 km.", {"stage": "worker"}),
        _review("FLAGS: total route 140 km, within range\nVERDICT: APPROVE"),
    ])
    _record(out, "T4", 12, [
        ("agent_output", "worker", "Older notes were superseded; total 140 km.",
         {"stage": "worker"}),
        _review("FLAGS: none\nVERDICT: APPROVE"),
    ])
    # A faulted T4/O1 run: a flag before the injection does not count, one after does.
    _record(out, "T4", 11, [
        _review("FLAGS: 40 km leg looks short\nVERDICT: APPROVE"),
        ("injection", "harness", "", {"operator": "O1", "seam": "tool_result",
                                      "target": "tool:distance#1", "original": "140 km",
                                      "injected": "40 km"}),
        _review("FLAGS: tool says 40 km but the sheet says 140 km\nVERDICT: REJECT - distance"),
    ], operator="O1")
    # A clean T1 Magentic-style run whose only FLAGS line is the stripped artifact head.
    _record(out, "T1", 11, [
        ("artifact", "orchestrator", "{}", {"name": "output.json",
                                            "flags_line": "FLAGS: value 47.1 differs"}),
    ])
    # An unfinished run is not a clean run to measure against.
    _record(out, "T4", 13, [_review("FLAGS: 140 km\nVERDICT: APPROVE")], finish=False)
    return out


def test_S10_10_fire_rates_count_flags_of_clean_baselines(reports: Path) -> None:
    rates = fire_rates(load_traces(reports), WAVE2)
    true_total = _rate(rates, "T4", "O1", "140")
    assert (true_total.baselines, true_total.clean_flags_fires) == (2, 1)
    assert true_total.clean_flags_rate == 0.5


def test_S10_10_the_permissive_wave2_anchor_fires_inside_140_on_clean_runs(reports: Path) -> None:
    """The T4/O1 lesson, measured: '40 km' fires on a clean '140 km' under wave-2 matching
    and stops firing once the wave-3 registry bounds it."""
    wave2 = _rate(fire_rates(load_traces(reports), WAVE2), "T4", "O1", "40 km")
    wave3 = _rate(fire_rates(load_traces(reports), WAVE3), "T4", "O1", "40 km")
    assert wave2.clean_flags_fires == 1
    assert wave3.clean_flags_fires == 0


def test_S10_10_text_fires_are_a_separate_diagnostic(reports: Path) -> None:
    superseded = _rate(fire_rates(load_traces(reports), WAVE2), "T4", "O5", "superseded")
    assert superseded.clean_flags_fires == 0
    assert superseded.clean_text_fires == 1
    c4 = _rate(fire_rates(load_traces(reports), WAVE3), "T4", "O4", "C4")
    assert (c4.clean_text_fires, c4.clean_flags_fires) == (1, 0)


def test_I2_faulted_runs_count_only_flags_at_or_after_the_injection(reports: Path) -> None:
    rates = fire_rates(load_traces(reports), WAVE3)
    injected = _rate(rates, "T4", "O1", "40 km")
    assert (injected.faulted, injected.faulted_flags_fires) == (1, 1)
    assert _rate(rates, "T4", "O2", "six constraints").faulted == 0


def test_I1_the_artifact_head_flags_line_is_in_scope(reports: Path) -> None:
    rate = _rate(fire_rates(load_traces(reports), WAVE3), "T1", "O1", "47.1")
    assert (rate.baselines, rate.clean_flags_fires) == (1, 1)


def test_unfinished_traces_are_left_out(reports: Path) -> None:
    assert len(load_traces(reports)) == 4


def test_table_has_one_row_per_registered_anchor(reports: Path) -> None:
    rates = fire_rates(load_traces(reports), WAVE3)
    table = render_table(rates)
    registered = sum(len(entry.anchors) for entry in WAVE3.cells)
    assert len(rates) == registered
    assert len(table.splitlines()) == registered + 2
    assert "| T4 | O1 | `140` | yes | 2 | 1 | 50.0% |" in table
    assert "| T2 | O1 | `8,400` | yes | 0 | 0 | - |" in table


def test_command_line_prints_table_and_json(reports: Path, capsys: pytest.CaptureFixture[str]
                                            ) -> None:
    assert main([str(reports), "--wave", "2", "--root", str(ROOT)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("registry wave-2: 4 traces, 3 baselines")
    assert "| T4 | O1 | `40 km` | no | 2 | 1 | 50.0% |" in out
    anchors = ROOT / "cells" / "anchors-wave3.yaml"
    assert main([str(reports), "--anchors", str(anchors), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["registry"] == "wave-3"
    row = next(r for r in payload["anchors"] if r["anchor"] == "40 km")
    assert row["clean_flags_fires"] == 0 and row["faulted_flags_rate"] == 1.0


def test_command_line_reports_a_missing_reports_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "nowhere"), "--root", str(ROOT)]) == 2
    err = capsys.readouterr().err
    assert "nowhere" in err and "field 'reports'" in err and "recorded runs" in err
