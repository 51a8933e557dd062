"""``sabot inspect CELL_DIR``: one cell's timeline in the terminal, fitted to its width."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from evidence_sessions import FAULT, tree_digest
from live_sessions import Session

from pytest_sabot.commands.cli import main

pytestmark = pytest.mark.slow  # reads a live session's records


@pytest.mark.parametrize("width", [60, 100, 160])
def test_I79_inspect_marks_injection_detection_and_probe_within_the_width(
    vigilant: Session, width: int, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    before = tree_digest(vigilant.out / "cells" / FAULT)
    assert main(["inspect", str(vigilant.out / "cells" / FAULT)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    assert any("injection" in x and "INJECTION" in x for x in lines)
    assert any("review" in x and "DETECTED ACT reject" in x for x in lines) or width < 80
    assert any("probe" in x and "PROBE" in x for x in lines)
    assert "VERDICT: REJECT" in text  # the reviewer's own words
    assert "soft tier quote:" in text
    assert "verdict: DETECTED_HARD (DETECTED_HARD REACTED RECOVERED)" in text
    assert "read under rules v0.1.3" in text
    assert "gate: pass (record matches)" in text
    assert tree_digest(vigilant.out / "cells" / FAULT) == before


def test_I79_inspect_json_has_every_event_in_order(
    vigilant: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(vigilant.out / "cells" / FAULT), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["label"] and "fixtures of the embedded model" not in data["label"]  # live
    recorded = (vigilant.out / "cells" / FAULT / "events.jsonl").read_text("utf-8").splitlines()
    assert [e["seq"] for e in data["events"]] == list(range(len(recorded)))
    injection = next(e for e in data["events"] if e["kind"] == "injection")
    assert "INJECTION" in injection["marks"] and "47.1 -> 74.1" in injection["what"]
    detected = [e for e in data["events"] if any(m.startswith("DETECTED") for m in e["marks"])]
    assert len(detected) == 1 and detected[0]["agent"] == "reviewer"
    assert detected[0]["seq"] > injection["seq"]


@pytest.mark.parametrize("width", [70, 100])
def test_I79_sabot_report_summary_fits_the_terminal(
    vigilant: Session, width: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    shutil.copytree(vigilant.out, out)
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["report", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    row = next(x for x in lines if x.startswith("langgraph-default"))
    assert "100.0% [20.7, 100.0]" in row  # the Sabot Score and its interval always stay
    assert any(x.startswith("report: ") for x in lines)
