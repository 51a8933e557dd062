"""Issue 21.6: the records of a trusted agent's session read and rescore where the agent's
package cannot be imported (SPEC I107): the session's manifest records the agent and the
adapter of its row, and ``sabot rescore``, ``report`` and ``inspect`` load that row as it
ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole pytest sessions

REPO = Path(__file__).resolve().parents[2]

# A worker that answers once and a reviewer that rejects what looks altered; reported as
# the agent's own checks.
AGENT = '''
from openai import OpenAI


def run(ctx):
    endpoint = ctx.model("worker")
    client = OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key, max_retries=0)
    prompt = ctx.task
    answer = client.chat.completions.create(model=endpoint.model, messages=[
        {"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user},
    ]).choices[0].message.content or ""
    delivered = ctx.handoff("worker", "reviewer", answer)
    review_prompt = ctx.reviewer_prompt(delivered, 0)
    review = client.chat.completions.create(model=endpoint.model, messages=[
        {"role": "system", "content": review_prompt.system},
        {"role": "user", "content": review_prompt.user},
    ]).choices[0].message.content or ""
    ctx.checks.review(review, round=0)
    return delivered
'''
CELLS = ["myagent_agent_run-default-O3-T1-s11", "myagent_agent_run-default-baseline-T1-s11"]


def _env(*paths: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, paths), str(REPO)])}


def test_I107_a_trusted_agents_records_rescore_where_its_package_is_not_importable(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / "myagent").mkdir(parents=True)
    (home / "myagent" / "__init__.py").write_text("")
    (home / "myagent" / "agent.py").write_text(textwrap.dedent(AGENT))
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-p", "no:xdist", "--sabot-wave=3", "--sabot-task=T1", "--sabot-seed=11",
         "--sabot-operator=baseline,O3", "--sabot-agent=myagent.agent:run",
         "--trust-local-agent", f"--sabot-out={out}"],
        cwd=home, env=_env(home), capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (manifest_file,) = (out / "sessions").glob("*.json")
    manifest = json.loads(manifest_file.read_text())
    assert manifest["agent"] == "myagent.agent:run"
    assert manifest["matrix"] == "wave3-myagent-agent-run"
    assert manifest["outside_row"] == "myagent_agent_run"
    (row,) = manifest["adapters"]
    assert row["framework"] == "myagent_agent_run" and row["origin"] == "--sabot-agent"
    results = json.loads((out / "results.json").read_text())
    assert sorted(c["cell_id"] for c in results["cells"]) == CELLS

    elsewhere = tmp_path / "elsewhere"  # a directory from which myagent cannot be imported
    elsewhere.mkdir()

    def sabot(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest_sabot.commands.cli", *args], cwd=elsewhere,
            env=_env(), capture_output=True, text=True, timeout=300, check=False,
        )

    probe = subprocess.run([sys.executable, "-c", "import myagent"], cwd=elsewhere,
                           env=_env(), capture_output=True, text=True, check=False)
    assert probe.returncode != 0
    rescored = sabot("rescore", str(out))
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    assert "rescored 2 cells under v0.2.1: identical to results.json" in rescored.stdout
    reported = sabot("report", str(out))
    assert reported.returncode == 0, reported.stdout + reported.stderr
    assert "myagent_agent_run-default" in reported.stdout
    inspected = sabot("inspect", str(out / "cells" / CELLS[1]), "--json")
    assert inspected.returncode == 0, inspected.stdout + inspected.stderr
    timeline = json.loads(inspected.stdout)
    baseline = next(c for c in results["cells"] if c["cell_id"] == CELLS[1])
    words = {"passed": "BASELINE_PASS", "failed": "BASELINE_FAIL", "RUN_ERROR": "RUN_ERROR"}
    assert timeline["verdict"] == words[baseline["status"]], timeline
    assert not timeline["notes"], timeline
    for what in (rescored, reported, inspected):
        assert "Traceback" not in what.stdout + what.stderr
        assert "validation error" not in what.stdout + what.stderr
