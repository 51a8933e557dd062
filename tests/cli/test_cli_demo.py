"""``sabot demo``: declared outcomes of the embedded model's personas gate the exit code.

One full demo run (all three frameworks) checks that the real engine produces every
declared outcome; a second, LangGraph-only run with wrong declarations checks that the
gate fails when it should.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sabot.commands.cli import main
from pytest_sabot.commands.demo import (
    CREDULOUS,
    DECLARED,
    VIGILANT,
    Declaration,
    cells_to_run,
    render_text,
    run_demo,
)
from pytest_sabot.matrix.standard import load_standard
from pytest_sabot.results import read_results


def test_declarations_cover_three_frameworks_two_personas_and_their_baselines() -> None:
    std = load_standard(3)
    assert {std.cell(d.cell_id).framework for d in DECLARED} == {
        "langgraph",
        "crewai",
        "autogen",
    }
    assert {d.persona for d in DECLARED} == {VIGILANT, CREDULOUS}
    assert len({std.cell(d.cell_id).task for d in DECLARED}) == 1
    declared = {(d.cell_id, d.persona) for d in DECLARED}
    for d in DECLARED:  # every fault cell's baseline outcome is declared too
        assert (std.cell(d.cell_id).baseline_id, d.persona) in declared


def test_S3_1_each_persona_runs_baselines_before_the_fault_cells_they_validate() -> None:
    std = load_standard(3)
    plan = cells_to_run(DECLARED, std.cell)
    for cells in plan.values():
        first_fault = next(i for i, c in enumerate(cells) if not c.is_baseline)
        assert all(c.is_baseline for c in cells[:first_fault])
        assert not any(c.is_baseline for c in cells[first_fault:])
        assert {c.baseline_id for c in cells} <= {c.id for c in cells}


@pytest.mark.slow
def test_demo_declared_outcomes_are_produced_by_the_real_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SABOT_HISTORY", raising=False)
    root = tmp_path / "reports"
    tmp_path = root / "demo"
    assert main(["demo", "--out", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(r["cell_id"], r["persona"]) for r in report["rows"]] == [
        (d.cell_id, d.persona) for d in DECLARED
    ]
    assert all(r["ok"] for r in report["rows"]), [r for r in report["rows"] if not r["ok"]]
    assert "fixtures of the embedded model" in report["label"]
    for persona in ("vigilant", "credulous"):  # --out keeps traces and results per persona
        results = read_results(tmp_path / persona)
        assert results.fixture and results.model == f"sim:{persona}"
        for cell in results.cells:
            assert (tmp_path / persona / "cells" / cell.cell_id / "events.jsonl").is_file()
    # every run it keeps is in the output root's history, as a session's would be
    from pytest_sabot.history import list_runs

    runs = list_runs(root / "history.sqlite")
    assert {r.kind for r in runs} == {"results", "lab"}
    assert {Path(r.out_dir).parent for r in runs if r.kind == "results"} == {tmp_path.resolve()}
    assert not (tmp_path / "history.sqlite").exists()


@pytest.mark.slow
def test_demo_gate_fails_when_an_outcome_is_not_produced(tmp_path: Path) -> None:
    wrong = (
        Declaration("langgraph-guardrail-O1-T1-s11", CREDULOUS, "DETECTED_HARD REACTED"),
        Declaration(
            "langgraph-guardrail-O1-T1-s11",
            VIGILANT,
            "DETECTED_HARD REACTED RECOVERED",
            via="escalate-interrupt",
        ),
        Declaration("langgraph-guardrail-baseline-T1-s11", VIGILANT, "BASELINE_PASS"),
    )
    report = run_demo(tmp_path, declared=wrong)
    assert not report.ok
    assert [r.ok for r in report.rows] == [False, False, True]
    assert report.rows[0].observed == "MISSED"
    assert report.rows[1].observed == "DETECTED_HARD REACTED RECOVERED without escalate-interrupt"
    text = "\n".join(render_text(report))
    assert "1/3 declared outcomes produced by the real engine" in text
    assert "MISMATCH langgraph-guardrail-O1-T1-s11 (sim:credulous)" in text


# A child interpreter in which the named frameworks' top-level modules cannot be found,
# as when their extras are not installed (the package itself is untouched).
HIDDEN_FRAMEWORKS = """
import sys
HIDDEN = {hidden!r}

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from pytest_sabot.commands.cli import main
sys.exit(main({argv!r}))
"""


def _demo_without(hidden: set[str], *argv: str) -> tuple[int, str, str]:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SABOT_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    script = HIDDEN_FRAMEWORKS.format(hidden=sorted(hidden), argv=["demo", *argv])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.slow
def test_issue22_17_demo_with_one_framework_says_which_frameworks_are_missing() -> None:
    code, out, err = _demo_without({"crewai", "autogen_agentchat", "autogen_core", "autogen_ext"})
    assert code == 3, out + err  # inconclusive: not every declared outcome could run
    assert "MISMATCH" not in out
    assert "installed not installed" not in out
    langgraph = [d for d in DECLARED if d.cell_id.startswith("langgraph-")]
    assert f"{len(langgraph)}/{len(langgraph)} declared outcomes produced" in out
    not_run = len(DECLARED) - len(langgraph)
    assert f"NOT RUN: {not_run} declared outcome(s) of crewai, autogen" in out
    assert "pip install 'pytest-sabot[crewai,autogen]'" in out
    assert "crewai-" not in out.split("NOT RUN")[0]  # no row of a framework that is missing


def test_issue22_17_missing_frameworks_names_each_with_its_extra() -> None:
    from pytest_sabot.commands.demo import install_hint, missing_frameworks

    std = load_standard(3)
    assert missing_frameworks(DECLARED, std.cell) == {}  # every extra is installed here
    hint = install_hint({"crewai": "...", "autogen": "..."})
    assert hint == "pip install 'pytest-sabot[crewai,autogen]'"
