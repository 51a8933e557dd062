"""The lab through the ``sabot`` command: ``sabot lab run|init|validate`` (the lab's own
commands, with their gate exit codes), ``sabot validate`` over scenario files, and
``sabot demo`` holding the three scripted controllers' declared gates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sabot.commands.cli import main
from pytest_sabot.commands.demo import DemoReport, render_text, run_demo
from pytest_sabot.commands.lab_demo import DECLARED
from pytest_sabot.commands.lab_demo import DemoRow as LabDemoRow


def test_L_sabot_lab_init_validate_and_run_a_user_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lab", "init", str(tmp_path / "mine")]) == 0
    (scenario,) = (tmp_path / "mine").glob("*.yaml")
    assert main(["lab", "validate", str(scenario)]) == 0
    assert main(["lab", "run", str(scenario), "--agent", "builtin:resilient",
                 "--out", str(tmp_path / "good")]) == 0
    assert main(["lab", "run", str(scenario), "--agent", "builtin:noop",
                 "--out", str(tmp_path / "noop"), "--json"]) == 1
    capsys.readouterr()
    assert main(["lab", "run", str(scenario), "--agent", "builtin:none",
                 "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--agent" in err and "Traceback" not in err
    record = json.loads((tmp_path / "noop" / "run.json").read_text())
    assert record["gate"]["outcome"] == "fail"


@pytest.mark.slow
def test_L_sabot_validate_covers_scenario_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lab", "init", str(tmp_path / "ok")]) == 0
    (good,) = (tmp_path / "ok").glob("*.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("timeout_before_commit", "timeout_sometimes"))
    capsys.readouterr()
    assert main(["validate", "--scenario", str(tmp_path / "ok")]) == 0
    out = capsys.readouterr().out
    assert f"scenario {good}: ok" in out and "lost-create-response.yaml: ok" in out
    assert "wave lab: ok (180 cells" in out
    assert main(["validate", "--scenario", str(bad)]) == 2
    out = capsys.readouterr().out
    assert f"scenario {bad}:" in out and "timeout_sometimes" in out


def test_L_sabot_demo_holds_the_controllers_declared_gates(tmp_path: Path) -> None:
    report = run_demo(tmp_path, declared=())
    assert [(r.agent, r.gate) for r in report.lab] == [
        ("builtin:naive", "fail"), ("builtin:resilient", "pass"), ("builtin:noop", "fail")]
    assert all(r.ok for r in report.lab) and report.ok
    assert "LS1" in report.lab[0].rules  # the naive controller's duplicate ticket
    assert (tmp_path / "lab" / "naive" / "run.json").is_file()
    assert "builtin:resilient" in "\n".join(render_text(report))
    # The tables fit the terminal: at 80 columns the least needed column goes, and the
    # line under the table says so.
    narrow = render_text(report, 80)
    table = [line for line in narrow if line.startswith(("agent ", "builtin:"))]
    assert len(table) == 1 + len(report.lab) and max(map(len, table)) <= 80, narrow
    assert "(narrow terminal: why not shown; sabot lab demo --json has every field)" in narrow
    wide = render_text(report, 200)
    assert any(line.startswith("builtin:naive ") and line.endswith(DECLARED[0].why)
               for line in wide), wide
    wrong = report.lab[1].model_copy(update={"gate": "fail", "ok": False})
    failed = DemoReport.model_validate({**report.model_dump(), "lab": [
        r.model_dump() for r in (report.lab[0], wrong, report.lab[2])]})
    assert not failed.ok
    assert isinstance(failed.lab[1], LabDemoRow)
