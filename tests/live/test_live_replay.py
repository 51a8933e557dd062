"""Replay (``replay:<dir>``) of a live session's recordings: no provider, no key, the same
verdicts and traces; a request that differs from the recording is a named RUN_ERROR."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from live_sessions import Session, read_events, strip_timing

from pytest_sabot.core.records import cell_dir
from pytest_sabot.gateway import GatewaySettings, start_gateway
from pytest_sabot.harness.run import RunSettings, run_cell
from pytest_sabot.matrix.standard import Standard
from pytest_sabot.results.adjudicate import score_baseline_dir

pytestmark = pytest.mark.slow

BASELINE = "langgraph-default-baseline-T1-s11"


def _cells(session: Session) -> dict[str, dict[str, Any]]:
    data = json.loads((session.out / "results.json").read_text("utf-8"))
    return {c["cell_id"]: c for c in data["cells"]}


def _comparable(event: dict[str, Any]) -> dict[str, Any]:
    """A trace event as replay must reproduce it: timing dropped, and the two fields that
    name the serving side (the run's configured model, the replayed call's price) set
    apart for their own assertions."""
    event = strip_timing(event)
    data = dict(event["data"])
    if event["kind"] == "run_start":
        data.pop("model")
    if event["kind"] == "model_call":
        data.pop("cost_usd")
    return {**event, "data": data}


def test_replay_session_runs_without_provider_or_key(replay_session: Session) -> None:
    assert replay_session.returncode == 0, replay_session.stdout[-3000:]
    assert replay_session.provider == []


def test_replay_gives_every_cell_the_live_verdict(
    live_session: Session, replay_session: Session
) -> None:
    live, replayed = _cells(live_session), _cells(replay_session)
    assert sorted(replayed) == sorted(live)
    for cell_id, verdict in live.items():
        assert replayed[cell_id] == verdict, cell_id


def test_replay_reproduces_every_trace_but_timing(
    live_session: Session, replay_session: Session
) -> None:
    for cell_id in _cells(live_session):
        live = read_events(live_session.out / "cells" / cell_id / "events.jsonl")
        replayed = read_events(replay_session.out / "cells" / cell_id / "events.jsonl")
        assert [_comparable(e) for e in replayed] == [_comparable(e) for e in live], cell_id
        start = replayed[0]["data"]["model"]
        assert start.startswith("replay:"), start
        for event in replayed:
            if event["kind"] == "model_call":
                assert event["data"]["cost_usd"] == 0.0  # a replayed call spends nothing


def _edited_root(wave1: Standard, where: Path) -> Path:
    """A copy of the shipped standard whose T1 work order says one thing more."""
    root = where / "standard"
    for part in ("cells", "tasks", "mappings"):
        shutil.copytree(wave1.root / part, root / part)
    material = sorted((root / "tasks" / "T1").rglob("work_order.md"))
    assert material, "T1 has no work_order.md to edit"
    for path in material:
        path.write_text(path.read_text("utf-8") + "\nFiled by the night shift.\n", "utf-8")
    return root


def _replay_one(
    wave1: Standard, live_session: Session, root: Path, out: Path, cell_id: str
) -> tuple[str | None, Path]:
    gateway = start_gateway(GatewaySettings())
    try:
        settings = RunSettings(
            root=root,
            out_dir=out,
            gateway_url=gateway.url,
            model=f"replay:{live_session.out / 'recordings'}",
            timeout_s=120.0,
        )
        outcome = run_cell(wave1.cell(cell_id), wave1.wave, settings)
    finally:
        gateway.close()
    return outcome.error, cell_dir(out, cell_id)


def test_replay_of_changed_task_material_is_a_named_run_error(
    wave1: Standard, live_session: Session, tmp_path: Path
) -> None:
    root = _edited_root(wave1, tmp_path)
    error, run_dir = _replay_one(wave1, live_session, root, tmp_path / "out", BASELINE)
    assert error is not None
    assert f"cell {BASELINE}" in error
    assert "agent worker" in error and "call index 0" in error
    assert "differs from the recording at messages" in error
    assert "first differs at character" in error and "night shift" in error
    assert score_baseline_dir(wave1, run_dir).status == "RUN_ERROR"


def test_replay_of_an_unrecorded_seed_is_a_named_run_error(
    wave1: Standard, live_session: Session, tmp_path: Path
) -> None:
    other = BASELINE.replace("-s11", "-s13")
    error, run_dir = _replay_one(wave1, live_session, wave1.root, tmp_path / "out", other)
    assert error is not None
    assert f"cell {other}" in error and "recording" in error
    assert score_baseline_dir(wave1, run_dir).status == "RUN_ERROR"
