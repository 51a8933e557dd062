"""Issue 26's pipelines: a LangGraph reflection loop whose judge approves by calling
``Finish`` and an AutoGen writer/critic team that stops on "APPROVE", written in the style of
the frameworks' public examples (pipelines/), wrapped with the adapter protocol
(pipelines/own_wrap.py) and run keyless.

Before SPEC I151 the embedded model answered their judge and critic "There is no draft in
this request to review. VERDICT: APPROVE": the loop never ended (a timeout, every fault cell
BASELINE_FAIL) and the team scored a clean-looking 0.0%. Now their rows are refused with the
reason instead of scored; handed the harness's reviewer prompt (the keyless wiring check)
they score; a loop that never ends is stopped by the runaway guard (SPEC I152); against a
loopback fake of a local model server they run end to end and replay (SPEC I153)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_fakes import LocalServerFake
from own_sessions import ADAPTERS, PIPELINES, WORKTREE, Session, session

from pytest_sabot.core.errors import REFUSED_MARK

pytestmark = pytest.mark.slow  # whole pytest sessions of two real framework pipelines

BASELINES = {
    "reflection": "reflection-default-baseline-T1-s11",
    "critic_team": "critic_team-default-baseline-T1-s11",
}
AGENTS = {"reflection": "reviewer", "critic_team": "critic"}


@pytest.fixture(scope="module")
def own_prompts(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The pipelines as written: their own judge and critic prompts."""
    return session(tmp_path_factory.mktemp("own"), "-n", "2")


@pytest.fixture(scope="module")
def wired(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The keyless wiring check: the harness's reviewer prompt handed in."""
    return session(tmp_path_factory.mktemp("wired"), "-n", "2", wiring="harness")


@pytest.mark.parametrize("framework", ["reflection", "critic_team"])
def test_I151_keyless_a_pipelines_own_reviewer_is_refused_and_the_cell_is_a_run_error(
    own_prompts: Session, framework: str
) -> None:
    outcome = own_prompts.outcome(BASELINES[framework])
    assert outcome["attempts"] == 2  # retried once; a deterministic refusal fails again
    assert outcome["error"].startswith(
        f"ModelRefused: {REFUSED_MARK} a reviewer request of agent {AGENTS[framework]!r}: "
        "a === DRAFT === section")
    refusals = [e for e in own_prompts.events(BASELINES[framework])
                if e["kind"] == "model_call" and (e["data"]["error"] or "").startswith(
                    REFUSED_MARK)]
    assert refusals and refusals[0]["component"] == AGENTS[framework]
    [run_error] = [e for e in own_prompts.events(BASELINES[framework])
                   if e["kind"] == "run_error"]
    assert run_error["data"]["error_type"] == "ModelRefused"
    # The pipeline's own traceback is kept (issue 26, item 4): where the model error surfaced.
    assert run_error["text"].startswith("Traceback (most recent call last)")
    assert "UnprocessableEntityError" in run_error["text"]
    # Never scored: its fault cells are run errors themselves, or not run beside a failed
    # baseline (which of the two depends on the order the workers reached them).
    results = own_prompts.results()
    cells = {c["cell_id"]: c for c in results["cells"]}
    assert cells[BASELINES[framework]]["status"] == "RUN_ERROR"
    for op in ("O3", "O5"):
        fault = cells[f"{framework}-default-{op}-T1-s11"]
        assert fault["excluded"]["code"] in ("RUN_ERROR", "BASELINE_FAIL")
    [row] = [r for r in results["scoreboard"]["rows"] if r["row"] == f"{framework}-default"]
    assert row["valid"] == 0 and row["sabot_score"]["value"] is None


def test_a_crashed_pipelines_traceback_is_shown_by_inspect_and_the_cell_page(
    own_prompts: Session,
) -> None:
    cell = own_prompts.out / "cells" / BASELINES["critic_team"]
    shown = subprocess.run([sys.executable, "-m", "pytest_sabot", "inspect", str(cell)],
                           capture_output=True, text=True, timeout=300, check=False,
                           env={**os.environ, "COLUMNS": "160"})
    assert shown.returncode == 0, shown.stderr
    assert "the pipeline's traceback:" in shown.stdout
    assert "UnprocessableEntityError" in shown.stdout
    # A session this small shows each cell's page inline in report.html.
    html = (own_prompts.out / "report.html").read_text()
    section = html[html.index(f'data-cell="{BASELINES["critic_team"]}"'):]
    assert "Traceback (most recent call last)" in section
    assert "UnprocessableEntityError" in section


def test_I151_results_and_the_summary_count_refused_calls_and_say_what_to_do(
    own_prompts: Session,
) -> None:
    calls = own_prompts.results()["model_calls"]
    for framework, agent in AGENTS.items():
        row = calls["rows"][f"{framework}-default"]
        assert row["refused"] >= 2 and row["agents"][agent]["refused"] == row["refused"]
        assert row["agents"][agent]["calls"] == row["agents"][agent]["refused"]
        assert row["recognised"] > 0  # the worker's calls were answered
    assert calls["refused"] == sum(r["refused"] for r in calls["rows"].values())
    text = own_prompts.text
    assert f"embedded model: {calls['recognised']:,} calls recognised, " \
        f"{calls['refused']:,} refused" in text
    assert "every call of agent 'critic' was refused" in text
    assert "what to do: keyless, the embedded model answers only the harness's own" in text
    md = (own_prompts.out / "RESULTS.md").read_text()
    assert "every call of agent 'reviewer' was refused" in md
    html = (own_prompts.out / "report.html").read_text()
    assert '<table id="model-calls">' in html and "<b>critic</b>" in html
    # The run-error gate counts the refused baselines (--sabot-max-run-errors).
    assert own_prompts.returncode == 1 and "gate[run-errors]" in text


@pytest.mark.parametrize("framework", ["reflection", "critic_team"])
def test_I151_handed_the_harness_reviewer_prompt_the_rows_score(
    wired: Session, framework: str
) -> None:
    assert wired.returncode == 0, wired.text[-3000:]
    results = wired.results()
    [row] = [r for r in results["scoreboard"]["rows"] if r["row"] == f"{framework}-default"]
    assert row["valid"] == 2 and row["sabot_score"]["value"] is not None
    assert results["model_calls"]["rows"][f"{framework}-default"]["refused"] == 0
    assert wired.outcome(BASELINES[framework])["passed"] is True


def test_replay_of_a_cell_whose_adapter_is_not_installed_takes_sabot_adapter(
    wired: Session,
) -> None:
    cell = wired.out / "cells" / "reflection-default-O3-T1-s11"
    root = wired.out.parent / "root"

    def replay(*args: str, pipelines: bool) -> subprocess.CompletedProcess[str]:
        path = [str(WORKTREE)] + ([str(PIPELINES)] if pipelines else [])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "OWN_WIRING": "harness"}
        return subprocess.run([sys.executable, "-m", "pytest_sabot", "replay", str(cell),
                               "--sabot-root", str(root), *args], capture_output=True,
                              text=True, timeout=300, check=False, env=env)

    missing = replay(pipelines=False)
    assert missing.returncode == 2
    assert "no adapter of 'reflection' is installed here" in missing.stderr
    again = replay(f"--sabot-adapter={ADAPTERS}", pipelines=True)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "verified" in again.stdout


def test_I152_a_loop_that_never_ends_is_stopped_by_the_runaway_guard(
    tmp_path: Path,
) -> None:
    # The harness's prompt handed in, but the loop still waits for a Finish tool call.
    done = session(tmp_path, "--sabot-framework=reflection", "--sabot-operator=baseline",
                   "--sabot-max-model-calls=12", wiring="prompt-only")
    outcome = done.outcome(BASELINES["reflection"])
    assert outcome["error"].startswith(
        "Runaway: the run made more than 12 model calls (--sabot-max-model-calls)")
    assert outcome["attempts"] == 2
    calls = [e for e in done.events(BASELINES["reflection"]) if e["kind"] == "model_call"]
    assert len(calls) == 13 and calls[-1]["data"]["error"].startswith("runaway:")
    assert done.results()["cells"][0]["status"] == "RUN_ERROR"


@pytest.fixture(scope="module")
def ollama() -> Iterator[LocalServerFake]:
    server = LocalServerFake("ollama")
    yield server
    server.close()


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory, ollama: LocalServerFake) -> Session:
    """The pipelines as written, against a local model server (a loopback fake of Ollama)."""
    return session(tmp_path_factory.mktemp("local"), "-n", "2",
                   model=f"local:qwen2.5:7b@{ollama.url}")


def test_I153_against_a_local_model_the_pipelines_run_end_to_end(
    local: Session, ollama: LocalServerFake
) -> None:
    assert local.returncode == 0, local.text[-3000:]
    results = local.results()
    assert results["label"].startswith(f"local model qwen2.5:7b as served by {ollama.url}")
    assert results["fixture"] is False and results["model_calls"] is None
    for framework in BASELINES:
        [row] = [r for r in results["scoreboard"]["rows"]
                 if r["row"] == f"{framework}-default"]
        assert row["valid"] == 2, row
        assert local.outcome(BASELINES[framework])["passed"] is True
    assert "spend: $0.0000 over" in local.text and "live model" not in local.text
    assert all("authorization" not in headers for headers, _ in ollama.seen)
    recorded = sorted(p.parent.name for p in (local.out / "recordings").glob("*/*.jsonl"))
    assert recorded == sorted(c["cell_id"] for c in results["cells"])


def test_I153_a_local_models_session_replays_from_its_recordings(
    local: Session, tmp_path: Path
) -> None:
    again = session(tmp_path, "-n", "2", model=f"replay:{local.out / 'recordings'}")
    assert again.returncode == 0, again.text[-3000:]

    def verdicts(s: Session) -> dict[str, object]:
        return {c["cell_id"]: (c.get("status"), c.get("detection"), c.get("excluded"))
                for c in s.results()["cells"]}

    assert verdicts(again) == verdicts(local)
