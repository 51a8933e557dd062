"""``sabot replay CELL_DIR``: a recorded cell runs again answered by its recorded exchanges
(no model, no provider, no key) and says verified or diverged (SPEC I77); the exit code
never reads better than the original run's gate (SPEC I78)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from evidence_sessions import BASELINE, FAULT, keyless, tree_digest
from live_sessions import Session

from pytest_sabot.commands.cli import main
from pytest_sabot.commands.replay import replay_cell

pytestmark = pytest.mark.slow  # live sessions through real LangGraph, then replays


def _copy(session: Session, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(session.out, out)
    return out


def _tamper(out: Path, cell_id: str, agent: str, call: int, old: str, new: str) -> None:
    """Change what one recorded model call answered (its request stays as recorded)."""
    path = out / "recordings" / cell_id / "exchanges.jsonl"
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    changed = 0
    for row in rows:
        if row["record"]["agent"] == agent and row["record"]["call_index"] == call:
            message = row["response"]["choices"][0]["message"]
            assert old in message["content"]
            message["content"] = message["content"].replace(old, new, 1)
            changed += 1
    assert changed == 1
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")


@pytest.mark.parametrize("cell_id", [FAULT, BASELINE])
def test_I77_a_recorded_cell_replays_verified_with_its_verdict_and_gate(
    vigilant: Session, cell_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = vigilant.out / "cells" / cell_id
    before = tree_digest(vigilant.out)
    served_before = len(vigilant.provider)
    assert main(["replay", str(cell)]) == 0
    out = capsys.readouterr().out
    assert "reproduction: verified" in out
    expected = "DETECTED_HARD" if cell_id == FAULT else "BASELINE_PASS"
    assert f"original verdict: {expected}" in out
    assert "original gate: pass (record matches)" in out
    assert "no model was called" in " ".join(out.split())
    assert tree_digest(vigilant.out) == before  # the record is only read
    assert len(vigilant.provider) == served_before


def test_I77_a_tampered_recording_diverges_naming_agent_call_and_difference(
    vigilant: Session, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _copy(vigilant, tmp_path)
    _tamper(out, FAULT, "reviewer", 0, "the draft has 74.1", "the draft has 47.1")
    assert main(["replay", str(out / "cells" / FAULT)]) == 1
    text = capsys.readouterr().out
    assert "reproduction: diverged" in text
    line = next(x for x in text.splitlines() if x.startswith("first difference"))
    assert "agent reviewer, call 0" in line
    assert "47.1" in text and "74.1" in text
    assert "original verdict: DETECTED_HARD" in text  # the recorded verdict, not the replay's
    report = replay_cell(out / "cells" / FAULT)
    assert report.reproduction == "diverged" and report.exit_code == 1
    assert report.difference is not None
    assert (report.difference.agent, report.difference.call) == ("reviewer", 0)
    assert report.difference.kind == "model_call"


def test_I77_a_call_the_recording_cannot_answer_is_named_by_the_gateway(
    vigilant: Session, tmp_path: Path
) -> None:
    out = _copy(vigilant, tmp_path)
    path = out / "recordings" / BASELINE / "exchanges.jsonl"
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    target = next(r for r in rows if r["record"]["agent"] == "worker"
                  and r["record"]["call_index"] == 1)
    target["record"]["request_hash"] = "0" * 64  # the recording no longer holds this request
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    report = replay_cell(out / "cells" / BASELINE)
    assert report.reproduction == "diverged" and report.exit_code == 1
    assert report.difference is not None
    assert (report.difference.agent, report.difference.call) == ("worker", 1)
    assert "could not answer" in report.difference.what
    assert report.original_verdict == "BASELINE_PASS"
    assert report.gate.outcome == "pass"


def test_I143_a_verified_replay_of_a_failed_run_exits_0_and_names_the_original_failure(
    credulous: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = credulous.out / "cells" / FAULT
    assert main(["replay", str(cell)]) == 0  # the one replay rule: 0 verified
    text = capsys.readouterr().out
    assert "reproduction: verified" in text
    assert "original verdict: MISSED" in text  # the original failure, never a pass
    assert "original gate: fail" in text
    assert "the original gate, fail, stands" in " ".join(text.split())
    assert "original gate: fail (wrong values: gain_factor=74.1" in text
    assert "it does not turn a failure into a pass" in text


def test_I77_a_cell_without_recorded_exchanges_is_inconclusive(
    vigilant: Session, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _copy(vigilant, tmp_path)
    shutil.rmtree(out / "recordings")  # as a keyless run leaves it: nothing recorded
    assert main(["replay", str(out / "cells" / FAULT)]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "no recorded exchanges to replay" in err and "only live runs" in err


def test_I77_replay_of_what_is_not_a_cell_record_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(tmp_path) in err and "<out>/cells/<cell id>" in err


def test_I77_replay_keeps_its_own_record_only_where_asked(
    vigilant: Session, tmp_path: Path
) -> None:
    kept = tmp_path / "replayed"
    report = replay_cell(vigilant.out / "cells" / BASELINE, out=kept)
    assert report.reproduction == "verified"
    events = (kept / "cells" / BASELINE / "events.jsonl").read_text("utf-8").splitlines()
    start = json.loads(events[0])["data"]
    assert start["model"].startswith("replay:")
    assert report.replay_dir == str(kept)


@pytest.mark.parametrize(("agent", "gate", "code"),
                         [("builtin:naive", "fail", 1), ("builtin:resilient", "pass", 0)])
def test_I143_sabot_replay_of_a_lab_run_follows_the_one_replay_rule(
    agent: str, gate: str, code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "lab"
    assert main(["lab", "run", "helpdesk/lost-create-response", "--agent", agent, "--out",
                 str(out), "--json"]) == code
    capsys.readouterr()
    before = tree_digest(out)
    assert main(["replay", str(out)]) == 0  # verified, whatever the original gate
    text = capsys.readouterr().out
    assert "reproduction: verified" in text and f"original gate: {gate} (exit {code})" in text
    assert main(["lab", "replay", str(out)]) == 0  # the lab's own replay: the same rule
    assert f"original_gate: {gate}" in capsys.readouterr().out
    # the record altered: the replay names where it parts from it, and exits 1
    record = json.loads((out / "run.json").read_text("utf-8"))
    record["gate"]["reasons"] = [*record["gate"]["reasons"], "an extra reason"]
    (out / "run.json").write_text(json.dumps(record), "utf-8")
    assert main(["replay", str(out / "run.json"), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["reproduction"] == "diverged" and report["first_difference"] is not None
    assert tree_digest(out).keys() == before.keys()


def test_I77_a_keyless_cell_replays_by_the_embedded_model_and_a_changed_trace_diverges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A keyless run records no exchanges; the embedded model answers its requests again
    (no provider is involved), so the replay still verifies the trace, and a trace changed
    after the run is named as the first difference."""
    code, output, out = keyless(tmp_path, [])
    assert code == 0, output
    assert not (out / "recordings").exists()
    before = tree_digest(out)
    assert main(["replay", str(out / "cells" / FAULT)]) == 0  # verified; its gate failed
    text = " ".join(capsys.readouterr().out.split())
    assert "original gate: fail" in text
    assert "replayed by the embedded model sim:realistic" in text
    assert "no provider was called" in text and "reproduction: verified" in text
    cell = out / "cells" / BASELINE
    assert main(["replay", str(cell)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "reproduction: verified" in text and "original gate: pass" in text
    assert tree_digest(out) == before
    events = cell / "events.jsonl"
    rows = [json.loads(line) for line in events.read_text("utf-8").splitlines()]
    calls = [r for r in rows if r["kind"] == "model_call" and r["component"] == "reviewer"]
    assert calls, "the slice's reviewer made no model call"
    calls[0]["data"]["completion_tokens"] += 1000
    events.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    assert main(["replay", str(cell)]) == 1
    text = " ".join(capsys.readouterr().out.split())
    assert "reproduction: diverged" in text and "agent reviewer" in text
