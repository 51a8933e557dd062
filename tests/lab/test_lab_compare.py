"""``sabot compare A B`` and ``sabot lab compare`` of two lab runs (issue 24, "Compare"):
gate and execution side by side, violations added and removed, coverage differences, the
first request where the runs diverge; exit 1 when B regresses against A (SPEC I142), 0
otherwise, 2 for bad input naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sabot.commands.cli import main as sabot
from pytest_sabot.commands.lab import main as lab_main
from pytest_sabot.history import list_runs
from pytest_sabot.lab.compare import GATE_RANK, compare_lab
from pytest_sabot.lab.record import read_run


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    assert lab_main(["demo", "--out", str(out)], history=False) == 0
    return out


def test_compare_naive_to_resilient_shows_the_duplicate_ticket_as_the_difference(
    demo: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    capsys.readouterr()
    assert sabot(["compare", str(demo / "naive" / "run.json"),
                  str(demo / "resilient" / "run.json")]) == 0
    text = capsys.readouterr().out
    assert "- LS1: 2 tickets existed for REQ-7731 over the run (at most one)" in text
    assert "ticket_created: 2 -> 1  (differs)" in text
    assert "first divergence: request 3: create_ticket with different operation_key" in text
    assert "[better]" in text
    assert sabot(["compare", str(demo / "naive"), str(demo / "resilient"), "--json"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert (c["a"]["gate"], c["b"]["gate"], c["gate_change"]) == ("fail", "pass", "better")
    assert c["violations_removed"] == ["LS1", "LC1"] and c["violations_added"] == []
    assert c["first_divergence"]["position"] == 3 and not c["regressed"]


def test_I10_a_comparison_of_scripted_controllers_says_they_are_fixtures(
    demo: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    capsys.readouterr()
    assert sabot(["compare", str(demo / "naive"), str(demo / "resilient")]) == 0
    text = capsys.readouterr().out
    assert text.rstrip().endswith(
        "A and B: scripted controller: an acceptance fixture, not a measurement of any model")
    assert sabot(["compare", str(demo / "naive"), str(demo / "resilient"), "--json"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert c["a"]["fixture"] and c["b"]["fixture"]


def test_I142_compare_exits_1_when_b_regresses_against_a(
    demo: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert sabot(["compare", str(demo / "resilient"), str(demo / "naive")]) == 1
    text = capsys.readouterr().out
    assert "REGRESSED: the gate got worse: pass -> fail" in text
    assert "+ LS1:" in text
    assert lab_main(["compare", str(demo / "resilient"), str(demo / "naive")]) == 1
    assert lab_main(["compare", str(demo / "naive"), str(demo / "naive")]) == 0
    # fail -> fail, but a new rule broken: noop breaks LC2 and LC3, naive does not
    assert lab_main(["compare", str(demo / "naive"), str(demo / "noop")]) == 1
    c = compare_lab(read_run(demo / "naive"), read_run(demo / "noop"))
    assert c.gate_change == "same" and c.violations_added == ["LC2", "LC3"] and c.regressed


def test_I142_gate_order_ranks_fail_and_error_alike_above_inconclusive_above_pass() -> None:
    assert GATE_RANK["pass"] < GATE_RANK["inconclusive"] < GATE_RANK["fail"]
    assert GATE_RANK["fail"] == GATE_RANK["error"]


def test_compare_finds_two_lab_sessions_by_their_history_run_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    history = tmp_path / "h.sqlite"
    monkeypatch.setenv("SABOT_HISTORY", str(history))
    for agent in ("naive", "resilient"):
        sabot(["lab", "run", "lost-create-response", "--agent", f"builtin:{agent}",
               "--out", str(tmp_path / agent)])
    a, b = sorted(list_runs(history), key=lambda r: Path(r.out_dir).name)
    assert Path(a.out_dir).name == "naive"
    capsys.readouterr()
    assert sabot(["compare", b.run_id, a.run_id]) == 1
    assert "REGRESSED" in capsys.readouterr().out
    assert lab_main(["compare", a.run_id, b.run_id, "--history", str(history)]) == 0


def test_compare_bad_input_exits_2_naming_the_file_and_the_field(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    broken = tmp_path / "broken" / "run.json"
    broken.parent.mkdir()
    data = json.loads((demo / "naive" / "run.json").read_text())
    data["gate"]["outcome"] = "maybe"
    broken.write_text(json.dumps(data))
    assert sabot(["compare", str(demo / "naive" / "run.json"), str(broken)]) == 2
    err = capsys.readouterr().err
    assert str(broken) in err and "gate.outcome" in err and "Traceback" not in err
    assert lab_main(["compare", str(demo / "naive"), str(tmp_path / "nowhere.json")]) == 2
    err = capsys.readouterr().err
    assert "nowhere.json" in err and "a lab run" in err
