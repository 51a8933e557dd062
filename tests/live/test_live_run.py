"""The live path end to end: the plugin runs real frameworks against an upstream it takes for
OpenAI (a loopback provider answered by the embedded model), pays for every call from
reported usage, records every exchange and keeps the key out of everything it writes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from live_sessions import MODEL, Session, clean_env, live_run, read_events

from pytest_sabot.gateway.prices import load_prices
from pytest_sabot.matrix.standard import Standard

pytestmark = pytest.mark.slow

EXPECTED_CELLS = 18  # 3 frameworks x 2 configs x (baseline, O1, O4), T1, seed 11


def results_json(session: Session) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((session.out / "results.json").read_text("utf-8"))
    return data


def model_calls(session: Session, cell_id: str) -> list[dict[str, Any]]:
    trace = session.out / "cells" / cell_id / "events.jsonl"
    return [e for e in read_events(trace) if e["kind"] == "model_call"]


def cells_of(session: Session) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = results_json(session)["cells"]
    return cells


def test_live_session_exits_zero_and_scores_every_selected_cell(live_session: Session) -> None:
    assert live_session.returncode == 0, live_session.stdout[-3000:] + live_session.stderr[-3000:]
    results = results_json(live_session)
    assert results["selection"]["recorded"] == EXPECTED_CELLS
    assert results["selection"]["missing"] == []


def test_I10_live_results_are_labelled_live_not_fixture(live_session: Session) -> None:
    results = results_json(live_session)
    assert results["model"] == MODEL
    assert results["fixture"] is False
    assert MODEL in results["label"] and "fixture" not in results["label"]
    for cell in cells_of(live_session):
        for call in model_calls(live_session, cell["cell_id"]):
            assert call["data"]["fixture"] is False, cell["cell_id"]


def test_live_baselines_pass_against_the_provider(live_session: Session) -> None:
    statuses = {
        c["cell_id"]: c["status"] for c in cells_of(live_session) if c["kind"] == "baseline"
    }
    assert len(statuses) == 6
    assert set(statuses.values()) == {"passed"}, statuses


def test_live_fault_cells_are_valid_runs(live_session: Session) -> None:
    faults = [c for c in cells_of(live_session) if c["kind"] == "fault"]
    assert len(faults) == 12
    assert [c["cell_id"] for c in faults if c["excluded"] is not None] == []


def test_live_provider_saw_only_the_configured_key_as_bearer(live_session: Session) -> None:
    served = live_session.provider
    assert served, "the provider was never called"
    assert all(entry["auth_ok"] for entry in served)
    assert {entry["status"] for entry in served} == {200}


def test_live_spend_is_reported_usage_times_the_price_table(live_session: Session) -> None:
    prices = load_prices()
    total = 0.0
    prompt_seen = completion_seen = 0
    for cell in cells_of(live_session):
        for call in model_calls(live_session, cell["cell_id"]):
            data = call["data"]
            price = prices.price(data["model_served"].split(":", 1)[1])
            assert price is not None, data["model_served"]
            expected = (
                data["prompt_tokens"] * price.input + data["completion_tokens"] * price.output
            ) / 1_000_000
            assert data["cost_usd"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
            total += data["cost_usd"]
            prompt_seen += data["prompt_tokens"]
            completion_seen += data["completion_tokens"]
    spend = results_json(live_session)["spend"]
    assert spend["budget"]["spent_usd"] == pytest.approx(total, rel=1e-9)
    assert spend["budget"]["unknown_cost_calls"] == 0
    usage = [e["usage"] for e in live_session.provider]
    assert prompt_seen == sum(u["prompt_tokens"] for u in usage)
    assert completion_seen == sum(u["completion_tokens"] for u in usage)
    assert spend["upstream_calls"] == len(live_session.provider)


def test_live_every_cell_has_a_recording_of_each_exchange(live_session: Session) -> None:
    for cell in cells_of(live_session):
        recording = live_session.out / "recordings" / cell["cell_id"] / "exchanges.jsonl"
        assert recording.is_file(), cell["cell_id"]
        rows = [json.loads(line) for line in recording.read_text("utf-8").splitlines() if line]
        calls = model_calls(live_session, cell["cell_id"])
        assert len(rows) == len(calls) > 0, cell["cell_id"]
        assert [r["record"]["request_hash"] for r in rows] == [
            c["data"]["request_hash"] for c in calls
        ]


def test_O4_live_served_by_the_downgrade_model_and_verified(live_session: Session) -> None:
    o4 = [c for c in cells_of(live_session) if c.get("operator") == "O4"]
    assert len(o4) == 6
    for cell in o4:
        assert cell["excluded"] is None, cell["cell_id"]
        events = read_events(live_session.out / "cells" / cell["cell_id"] / "events.jsonl")
        injections = [e for e in events if e["kind"] == "injection"]
        assert [(e["component"], e["data"]["injected"]) for e in injections] == [
            ("gateway", "openai:gpt-5.6-luna")
        ]
        probe = next(e for e in events if e["kind"] == "probe")
        assert probe["data"]["landed"] is True, cell["cell_id"]
    assert any(entry["model"] == "gpt-5.6-luna" for entry in live_session.provider)


# ------------------------------------------------------------------ secrets


def _files_holding(root: Path, secret: str) -> list[str]:
    needle = secret.encode("utf-8")
    return [str(path) for path in root.rglob("*") if path.is_file() and needle in path.read_bytes()]


def test_canary_key_reaches_no_output_file(live_session: Session, canary: str) -> None:
    assert (live_session.out / "recordings").is_dir()
    assert _files_holding(live_session.out, canary) == []


def test_canary_key_reaches_neither_junit_nor_log_nor_console(
    live_session: Session, canary: str
) -> None:
    assert live_session.junit.is_file() and live_session.log.is_file()
    assert canary not in live_session.junit.read_text("utf-8")
    assert canary not in live_session.log.read_text("utf-8")
    assert canary not in live_session.stdout + live_session.stderr


# ------------------------------------------------------------------ plan


def test_plan_projects_cost_from_recorded_usage(live_session: Session, wave1: Standard) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pytest_sabot.commands.cli import main; sys.exit(main(sys.argv[1:]))",
            "plan",
            "--sabot-wave",
            "1",
            "--sabot-model",
            MODEL,
            "--from",
            str(live_session.out),
        ],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert f"recorded in {live_session.out}" in proc.stdout
    # Independently: mean calls per run and tokens per call of each row, from the traces.
    per_row: dict[str, list[dict[str, Any]]] = {}
    for cell in cells_of(live_session):
        per_row.setdefault(cell["row"], []).append(cell)
    price = load_prices().price("gpt-5.6-terra")
    assert price is not None
    runs = {row: 0 for row in per_row}
    for registered in wave1.cells:
        if not registered.carved_out:
            runs[registered.row] = runs.get(registered.row, 0) + 1
    expected = 0.0
    for row, cells in per_row.items():
        calls = [c for cell in cells for c in model_calls(live_session, cell["cell_id"])]
        mean_calls = len(calls) / len(cells)
        prompt = sum(c["data"]["prompt_tokens"] for c in calls) / len(calls)
        completion = sum(c["data"]["completion_tokens"] for c in calls) / len(calls)
        expected += (
            runs[row] * mean_calls * (prompt * price.input + completion * price.output) / 1e6
        )
    total = re.search(r"total: \d+ runs, \d+ calls, \$([0-9.]+)", proc.stdout)
    assert total is not None, proc.stdout
    assert float(total.group(1)) == pytest.approx(expected, abs=0.006)


# ------------------------------------------------------------------ O4 default target


def test_O4_live_downgrade_defaults_to_the_wave_downgrade_model(root: Path, canary: str) -> None:
    session = live_run(
        root / "o4-default",
        canary,
        ["--sabot-framework=langgraph", "--sabot-config=default", "--sabot-operator=O4"],
    )
    cell = "langgraph-default-O4-T1-s11"
    events = read_events(session.out / "cells" / cell / "events.jsonl")
    assert [e for e in events if e["kind"] == "run_error"] == []
    injected = [e["data"]["injected"] for e in events if e["kind"] == "injection"]
    assert injected == ["openai:gpt-5.6-luna"]


def test_I10_live_label_names_a_non_default_upstream(live_session: Session) -> None:
    results = results_json(live_session)
    assert "127.0.0.1" in results["label"]
    assert "127.0.0.1" in (live_session.out / "RESULTS.md").read_text("utf-8")


def test_plan_from_a_recording_refuses_what_cannot_project_a_live_wave(
    live_session: Session, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`sabot plan --from` projects only from a run recorded live of the same wave: a folder
    with no record, a keyless recording (the embedded model's token counts) and another
    wave's recording are refused, naming the file and what it holds, before any spend."""
    import shutil

    from pytest_sabot.commands.cli import main

    plan = ["plan", "--sabot-wave", "1", "--sabot-model", MODEL, "--from"]
    assert main([*plan, str(tmp_path / "nope")]) == 2
    assert "no such directory" in capsys.readouterr().err
    keyless = tmp_path / "keyless"
    shutil.copytree(live_session.out / "cells", keyless / "cells")
    for trace in keyless.glob("cells/*/events.jsonl"):
        text = trace.read_text()
        trace.write_text(text.replace(f'"model":"{MODEL}"', '"model":"sim:realistic"', 1)
                         .replace(f'"model": "{MODEL}"', '"model": "sim:realistic"', 1))
    assert main([*plan, str(keyless)]) == 2
    err = capsys.readouterr().err
    assert "a run recorded live" in err and "sim:realistic" in err and "events.jsonl" in err
    assert main(["plan", "--sabot-wave", "2", "--sabot-model", MODEL, "--from",
                 str(live_session.out)]) == 2
    assert "a recording of wave 2, got 'wave 1'" in capsys.readouterr().err
