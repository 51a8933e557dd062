"""Campaigns (docs/LAB.md, "Campaigns", L14-L15): a campaign file planned into trials, each
an ordinary lab run through the real engine; the summary keeps every trial, counts per
scenario x agent with Wilson intervals and never pools; a killed campaign resumes."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_sabot.commands.lab import main
from pytest_sabot.lab.campaign import (
    CampaignFile,
    TrialResult,
    campaign_exit,
    plan,
    summarize,
)
from pytest_sabot.lab.campaign_load import load_campaign
from pytest_sabot.lab.record import read_run
from pytest_sabot.scoring.stats import wilson

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_ADAPTER = REPO / "examples" / "lab-adapter"


def write_campaign(path: Path, **changes: Any) -> Path:
    data: dict[str, Any] = {
        "format_version": 1, "name": "small",
        "scenarios": ["lost-create-response", "rate-limited-assignment"],
        "agents": ["builtin:naive", "builtin:resilient"], "seeds": [1, 2],
    }
    data.update(changes)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def result(outcome: str, scenario: str = "s", agent: str = "builtin:naive",
           n: int = 1) -> TrialResult:
    return TrialResult(trial_id=f"{scenario}-{agent}-{n}-{outcome}", scenario=scenario,
                       agent=agent, seed=n, repetition=1, outcome=outcome)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the plan


def test_L14_a_campaign_plans_every_scenario_agent_seed_and_repetition_in_file_order() -> None:
    campaign = CampaignFile(name="c", scenarios=["a.yaml", "b"], agents=["builtin:naive",
                            "pkg.mod:run", "openai:gpt-4o-mini"], seeds=[7, 8], repetitions=2)
    trials = plan(campaign, ["alpha", "beta"])
    assert len(trials) == 2 * 3 * 2 * 2
    assert [t.trial_id for t in trials[:4]] == [
        "alpha--builtin-naive--s7-r1", "alpha--builtin-naive--s7-r2",
        "alpha--builtin-naive--s8-r1", "alpha--builtin-naive--s8-r2"]
    assert trials[-1].trial_id == "beta--openai-gpt-4o-mini--s8-r2"
    assert len({t.trial_id for t in trials}) == len(trials)
    with pytest.raises(ValueError, match="share the trial directory"):
        plan(campaign, ["alpha", "alpha"])


def test_L14_a_bad_campaign_file_names_the_file_and_the_field_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = {
        "agents.1": {"agents": ["builtin:naive", "no agent"]},
        "agents.0": {"agents": ["builtin:careless"]},
        "scenarios.1": {"scenarios": ["lost-create-response", "no-such-scenario"]},
        "seeds.1": {"seeds": [1, 1]},
        "repetitions": {"repetitions": 0},
        "colour": {"colour": "blue"},
    }
    for field, change in cases.items():
        path = write_campaign(tmp_path / f"{field}.yaml", **change)
        out = tmp_path / f"out-{field}"
        assert main(["campaign", str(path), "--out", str(out)]) == 2, field
        err = capsys.readouterr().err
        assert str(path) in err and f"'{field}'" in err, err
        assert "Traceback" not in err
        assert not out.exists(), field  # nothing ran, nothing was written


def test_L14_a_trusted_agent_needs_the_trust_flag_and_a_live_one_the_live_opt_in(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_campaign(tmp_path / "c.yaml", agents=["builtin:naive", "pkg.agent:run"])
    assert main(["campaign", str(path), "--out", str(tmp_path / "o1")]) == 2
    assert "--trust-local-agent" in capsys.readouterr().err
    path = write_campaign(tmp_path / "d.yaml", agents=["openai:gpt-4o-mini"])
    assert main(["campaign", str(path), "--out", str(tmp_path / "o2")]) == 2
    assert "'agents.0'" in capsys.readouterr().err
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()


def test_L14_the_shipped_campaign_is_valid_and_sabot_validate_checks_campaigns(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loaded = load_campaign(REPO / "campaigns" / "offline.yaml")
    assert len(loaded.trials) == 2 * 3 * 3
    from pytest_sabot.commands.cli import main as sabot

    bad = write_campaign(tmp_path / "bad.yaml", seeds=[])
    assert sabot(["validate", "--campaign", str(bad)]) == 2
    out = capsys.readouterr().out
    assert f"campaign {bad}: {bad}: field 'seeds'" in out
    assert "campaigns/offline.yaml: ok (offline; 18 trials)" in out


# --------------------------------------------------------------------------- the summary


def test_L15_the_summary_keeps_every_trial_and_never_pools_two_agents() -> None:
    results = [result("pass", "s1", "builtin:resilient", 1), result("pass", "s1",
               "builtin:resilient", 2), result("fail", "s1", "builtin:naive", 1),
               result("inconclusive", "s1", "builtin:naive", 2),
               result("not_run", "s1", "builtin:naive", 3),
               result("error", "s2", "builtin:naive", 1)]
    campaign = CampaignFile(name="c", scenarios=["s1", "s2"], agents=["builtin:naive",
                            "builtin:resilient"], seeds=[1, 2, 3])
    summary = summarize(campaign, "d" * 64, results)
    assert [(g.scenario, g.agent) for g in summary.groups] == [
        ("s1", "builtin:resilient"), ("s1", "builtin:naive"), ("s2", "builtin:naive")]
    naive = summary.groups[1]
    assert (naive.planned, naive.n) == (3, 2)
    assert naive.counts == {"pass": 0, "fail": 1, "error": 0, "inconclusive": 1}
    interval = wilson(1, 2)
    assert interval is not None
    assert (naive.rates["fail"].low, naive.rates["fail"].high) == (interval.low, interval.high)
    assert naive.rates["fail"].rate == 0.5
    assert [t.outcome for t in summary.trials] == [r.outcome for r in results]
    assert (summary.planned, summary.recorded, summary.complete) == (6, 5, False)
    assert summary.exit_code == 2


def test_L15_the_campaign_exit_code_follows_the_gates_precedence() -> None:
    assert campaign_exit([result("pass"), result("pass")]) == 0
    assert campaign_exit([result("pass"), result("inconclusive")]) == 3
    assert campaign_exit([result("pass"), result("not_run")]) == 3
    assert campaign_exit([result("inconclusive"), result("fail")]) == 1
    assert campaign_exit([result("fail"), result("error")]) == 2


def test_L14_a_campaign_runs_records_in_the_history_and_prints_every_trial(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_campaign(tmp_path / "c.yaml")
    out = tmp_path / "runs" / "campaign"
    code = main(["campaign", str(path), "--out", str(out)], prog="sabot lab", history=True)
    printed = capsys.readouterr().out
    assert code == 1  # naive fails: an ordinary failed trial fails the campaign
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and summary["recorded"] == 8
    for trial in summary["trials"]:
        assert trial["trial_id"] in printed
        record = read_run(out / trial["run"])
        assert record.scenario.world.seed == trial["seed"]
        assert record.gate.outcome == trial["outcome"]
    groups = {(g["scenario"], g["agent"]): g for g in summary["groups"]}
    assert groups[("lost-create-response", "builtin:naive")]["counts"]["fail"] == 2
    assert groups[("lost-create-response", "builtin:resilient")]["counts"]["pass"] == 2
    # Each scenario's table: one row per agent with n, every outcome's count, the pass rate.
    table = printed[printed.index("scenario lost-create-response"):]
    assert re.search(r"builtin:naive\s+2\s+0\s+2\s+0\s+0\s+0\.0% \[0\.0%, 65\.8%\]", table), table
    assert re.search(r"builtin:resilient\s+2\s+2\s+0\s+0\s+0\s+100\.0% \[34\.2%, 100\.0%\]",
                     table), table
    with sqlite3.connect(out / "history.sqlite") as db:
        (runs,) = db.execute("select count(*) from runs").fetchone()
    assert runs == 8
    # The same command again runs nothing: every trial is done.
    before = {p: p.stat().st_mtime_ns for p in out.rglob("run.json")}
    assert main(["campaign", str(path), "--out", str(out)], history=True) == 1
    assert {p: p.stat().st_mtime_ns for p in out.rglob("run.json")} == before
    assert not list(out.rglob("run.prev-*.json"))


def test_L14_a_directory_resumes_only_the_campaign_that_started_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["campaign", str(write_campaign(tmp_path / "a.yaml", seeds=[1])),
                 "--out", str(out)]) == 1
    capsys.readouterr()
    assert main(["campaign", str(write_campaign(tmp_path / "b.yaml", seeds=[1, 2])),
                 "--out", str(out)]) == 2
    assert "another campaign's trials" in capsys.readouterr().err
    assert len(list(out.rglob("run.json"))) == 4


# --------------------------------------------------------------------------- kill -9


SLOW_AGENT = '''
import os
import time
from pathlib import Path

from pytest_sabot.lab.controllers import resilient

MARK = Path("@WORKDIR@/hold")


def run(context):
    if context.task.request_key and not MARK.exists() and Path("@WORKDIR@/arm").exists():
        MARK.write_text(str(os.getpid()))
        time.sleep(120)  # the campaign is killed while this trial runs
    return resilient(context)
'''


@pytest.mark.slow
def test_L14_a_campaign_killed_with_sigkill_resumes_without_losing_or_repeating_a_trial(
        tmp_path: Path) -> None:
    package = tmp_path / "slowbot"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "agent.py").write_text(textwrap.dedent(SLOW_AGENT).replace(
        "@WORKDIR@", str(tmp_path)))
    path = write_campaign(tmp_path / "c.yaml", scenarios=["lost-create-response"],
                          agents=["builtin:naive", "slowbot.agent:run"], seeds=[1, 2, 3])
    out = tmp_path / "runs" / "campaign"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    command = [sys.executable, "-m", "pytest_sabot", "lab", "campaign",
               str(path), "--out", str(out), "--trust-local-agent"]
    # First run: the slow agent's first trial holds; the campaign is killed there.
    (tmp_path / "arm").write_text("")
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not (tmp_path / "hold").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the campaign's process, without warning
    os.kill(int((tmp_path / "hold").read_text()), signal.SIGKILL)  # and the agent's
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    done_before = {p.parent.name: p.read_bytes() for p in out.rglob("run.json")}
    assert sorted(done_before) == [f"lost-create-response--builtin-naive--s{s}-r1"
                                   for s in (1, 2, 3)]
    held = out / "lost-create-response--slowbot.agent-run--s1-r1"
    assert (held / "agent-1.log").exists() and not (held / "run.json").exists()
    assert not (out / "summary.json").exists()

    # The same command resumes: only the three trusted trials run, the killed one again.
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 1, done.stdout + done.stderr  # naive fails
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and summary["recorded"] == 6
    for name, data in done_before.items():  # nothing done before ran again
        assert (out / name / "run.json").read_bytes() == data
    assert not list(out.rglob("run.prev-*.json"))
    assert (held / "agent-1.log").exists() and (held / "agent-2.log").exists()  # kept
    trusted = read_run(held)
    assert trusted.gate.outcome == "pass" and trusted.execution.status == "completed"
    ran = [line.split(":")[0] for line in done.stderr.splitlines()
           if line.startswith("lost-create-response--")]
    assert ran == [f"lost-create-response--slowbot.agent-run--s{s}-r1" for s in (1, 2, 3)]
    with sqlite3.connect(out / "history.sqlite") as db:
        (runs,) = db.execute("select count(*) from runs").fetchone()
    assert runs == 6  # each trial once in the history


def test_L14_a_trusted_agent_that_does_not_load_is_bad_input_before_any_trial(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_campaign(tmp_path / "c.yaml", agents=["builtin:naive", "nosuch_pkg_x.a:run"])
    out = tmp_path / "out"
    assert main(["campaign", str(path), "--out", str(out), "--trust-local-agent"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: field 'agents.1'" in err and "No module named 'nosuch_pkg_x'" in err
    assert not out.exists()


@pytest.mark.slow
def test_L14_the_documented_campaign_runs_the_published_adapter_from_a_relative_path(
        tmp_path: Path) -> None:
    """The campaign of docs/LAB.md: two shipped scenarios, two controllers and the
    published lookup adapter, three seeds each (PYTHONPATH relative to the project)."""
    project = tmp_path / "project"
    project.mkdir()
    for part in ("campaigns", "examples"):
        subprocess.run(["cp", "-r", str(REPO / part), str(project / part)], check=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(["examples/lab-adapter", str(REPO)]),
           "COLUMNS": "80"}
    done = subprocess.run([sys.executable, "-m", "pytest_sabot", "lab", "campaign",
                           "campaigns/offline.yaml", "--out", "runs/campaign",
                           "--trust-local-agent"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "campaign offline: 18 of 18 trials recorded (complete)"
    summary = json.loads((project / "runs" / "campaign" / "summary.json").read_text())
    assert len(summary["trials"]) == 18 and len(summary["groups"]) == 6
    for trial in summary["trials"]:
        assert any(line.startswith(trial["trial_id"] + " ") for line in lines), trial
    lookup = [g for g in summary["groups"] if g["agent"] == "customer_lookup:run"]
    assert [g["counts"]["fail"] for g in lookup] == [3, 3]
    record = read_run(project / "runs" / "campaign" / summary["trials"][6]["run"])
    assert record.execution.output == "Customer lookup succeeded: True"
