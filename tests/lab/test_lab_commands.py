"""``python -m pytest_sabot.lab``: run/init/validate/demo/replay/evaluate/view as
functions returning exit codes (0 pass, 1 fail, 2 error or bad input, 3 inconclusive);
user errors print a message naming file and field, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lab_helpers import raw

from pytest_sabot.commands.lab import main


def test_run_exits_with_the_gate_and_writes_the_record(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "lost-create-response", "--agent", "builtin:naive",
                 "--out", str(tmp_path / "naive")]) == 1
    out = capsys.readouterr().out
    assert "gate FAIL (exit 1)" in out and "LS1 (safety)" in out
    assert "acceptance fixture" in out
    assert (tmp_path / "naive" / "run.json").is_file()
    assert main(["run", "lost-create-response", "--agent", "builtin:resilient",
                 "--out", str(tmp_path / "resilient")]) == 0


def test_run_inconclusive_exits_3(tmp_path: Path) -> None:
    data = raw("lost-create-response")
    data["faults"][0]["call"] = 3  # the resilient agent never makes a third create
    path = tmp_path / "late.yaml"
    import yaml
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path), "--agent", "builtin:resilient", "--out",
                 str(tmp_path / "out")]) == 3


def test_a_second_run_into_the_same_directory_sets_the_first_record_aside(
        tmp_path: Path) -> None:
    for _ in range(2):
        main(["run", "lost-create-response", "--agent", "builtin:noop", "--out",
              str(tmp_path)])
    # the record and its renderings alike: the earlier ones are set aside, never replaced
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix != ".sqlite") == [
        "junit.prev-1.xml", "junit.xml", "report.html", "report.prev-1.html", "run.json",
        "run.prev-1.json"]


def test_bad_input_exits_2_with_a_message_naming_file_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("format_version: 1\nname: x\n")
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "field 'world'" in err and "Traceback" not in err
    assert main(["run", str(bad), "--agent", "builtin:naive", "--out", str(tmp_path)]) == 2
    assert main(["run", "lost-create-response", "--agent", "gpt", "--out",
                 str(tmp_path)]) == 2
    assert "--agent" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "nothing.json")]) == 2


def test_validate_accepts_shipped_and_starter_scenarios(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "mine")]) == 0
    starter = tmp_path / "mine" / "my-scenario.yaml"
    assert main(["validate", str(starter), "stale-ticket-read"]) == 0
    assert "valid (my-scenario; faults lost-request:timeout_before_commit)" in \
        capsys.readouterr().out
    assert main(["init", str(tmp_path / "mine")]) == 2  # never overwrites


def test_demo_exits_0_when_every_declared_gate_is_produced(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["agent"], r["gate"], r["ok"]) for r in rows] == [
        ("builtin:naive", "fail", True), ("builtin:resilient", "pass", True),
        ("builtin:noop", "fail", True)]


def test_replay_and_evaluate_a_failed_run(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    main(["run", "lost-create-response", "--agent", "builtin:naive", "--out", str(tmp_path)])
    capsys.readouterr()
    assert main(["replay", str(tmp_path)]) == 0  # verified
    out = capsys.readouterr().out
    assert "reproduction: verified" in out and "original_gate: fail" in out
    assert main(["evaluate", str(tmp_path / "run.json")]) == 1  # still a failed run
    data = json.loads((tmp_path / "run.json").read_text())
    data["streams"]["effects"][1]["after"]["request_key"] = "REQ-0000"
    (tmp_path / "run.json").write_text(json.dumps(data))
    assert main(["replay", str(tmp_path)]) == 1  # diverged


def test_view_prints_what_the_agent_is_given(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", "lost-create-response"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert set(view) == {"task", "capabilities", "catalog"}


@pytest.mark.slow
def test_python_dash_m_entry_point_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sabot.lab", "run", "lost-create-response", "--agent",
         "builtin:noop", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "gate FAIL" in done.stdout
