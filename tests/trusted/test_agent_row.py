"""A trusted agent's row declares its own check surfaces (SPEC I155-I158,
docs/TRUSTED_AGENTS.md section "The agent's row"): its name (``--sabot-agent-row``, by
default built from the callable), its mapping (``--sabot-agent-mapping``), the variables
its child is given (``--sabot-agent-env``), and every report names the callable that ran."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_sabot.core.frameworks import framework_names
from pytest_sabot.core.models.outside import OutsideRow
from pytest_sabot.trusted.agent_row import (
    default_row,
    env_refusal,
    mapping_refusal,
    row_refusal,
)
from pytest_sabot.trusted.sabot import MAPPING

REPO = Path(__file__).resolve().parents[2]
SECRET = "agent-env-value-7f3a9c21d4"
ROW = "my_pipeline"

# A worker with tools and a critic (its own name for its reviewer), one revision. It keeps
# what its environment held outside the records (env.json) and writes the passed value
# where the harness keeps things: its log and its reviews' text.
AGENT = '''
import json
import shutil
import os
from pathlib import Path

from openai import OpenAI


def _messages(prompt):
    return [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}]


def run(ctx):
    token = os.environ.get("MY_AGENT_TOKEN", "")
    Path("@WORKDIR@/env.json").write_text(json.dumps(
        {"token": token, "other": os.environ.get("NOT_PASSED_VAR")}))
    print("token is", token, flush=True)
    endpoint = ctx.model("worker")
    client = OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key, max_retries=0)
    judge = ctx.model("reviewer")
    critic = OpenAI(base_url=judge.base_url, api_key=judge.api_key, max_retries=0)
    tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
              "parameters": t.parameters}} for t in ctx.tools]
    prompt, delivered = ctx.task, ""
    for round in (0, 1):
        messages = _messages(prompt)
        for _ in range(ctx.capabilities["max_tool_model_calls"]):
            message = client.chat.completions.create(
                model=endpoint.model, messages=messages, tools=tools).choices[0].message
            if not message.tool_calls:
                break
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments or "{}")
                seen = ctx.call_tool(call.function.name, arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": seen})
        else:
            message = client.chat.completions.create(
                model=endpoint.model, messages=messages).choices[0].message
        delivered = ctx.handoff("worker", "reviewer", message.content or "")
        review = critic.chat.completions.create(
            model=endpoint.model, messages=_messages(ctx.reviewer_prompt(delivered, round))
        ).choices[0].message.content or ""
        ctx.checks.review("(checked with " + token + ")\\n" + review, component="critic",
                          round=round)
        last = review.strip().splitlines()[-1] if review.strip() else ""
        if round == 0 and "REJECT" in last.upper():
            reason = last.split("REJECT", 1)[1].strip(" -:") or review
            ctx.checks.retry(reason)
            prompt = ctx.worker_prompt(1, reason)
            continue
        break
    return delivered
'''


def _mapping(where: Path, framework: str = ROW, name: str = "critic-mapping.yaml",
             **act: Any) -> Path:
    """The shipped mapping, for the row ``framework``, its reject row read from the critic."""
    data = yaml.safe_load(MAPPING.read_text())
    data["framework"] = framework
    reject = data["revisions"][0]["acts"][0]
    reject.update(id="reject-critic", component="critic",
                  match={"event": "review", "component": ["critic"], "verdict": "reject"},
                  **act)
    path = where / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _package(root: Path) -> str:
    (root / "critics").mkdir()
    (root / "critics" / "__init__.py").write_text("")
    (root / "critics" / "team.py").write_text(
        textwrap.dedent(AGENT).replace("@WORKDIR@", str(root)))
    return "critics.team:run"


def _env(*paths: Path, **extra: str) -> dict[str, str]:
    path = os.pathsep.join([*map(str, paths), str(REPO)])
    return {**os.environ, "PYTHONPATH": path, **extra}


def _session(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-p", "no:xdist", "--sabot-wave=3", "--sabot-task=T1", "--sabot-seed=11",
         f"--sabot-out={cwd / 'out'}", "--trust-local-agent", *args],
        cwd=cwd, env=_env(cwd, MY_AGENT_TOKEN=SECRET, NOT_PASSED_VAR="never-seen-value"),
        capture_output=True, text=True, timeout=600, check=False,
    )


# ----------------------------------------------------------------------- the rules


def test_I155_the_default_row_name_is_built_from_the_callables_path_as_documented() -> None:
    assert default_row("mypkg.agent:run") == "mypkg_agent_run"
    assert default_row("My.Pipeline:Team.go") == "my_pipeline_team_go"
    assert default_row("_private.x:run") == "private_x_run"
    assert default_row("pkg9.mod:__call__") == "pkg9_mod_call"
    for target in ("mypkg.agent:run", "My.Pipeline:Team.go", "_x:y", "a1.__b__:C"):
        assert re.fullmatch(r"[a-z][a-z0-9_]*", default_row(target)), target
    docs = (REPO / "docs" / "TRUSTED_AGENTS.md").read_text()
    assert "`mypkg.agent:run` -> `mypkg_agent_run`" in docs
    assert "`My.Pipeline:Team.go` -> `my_pipeline_team_go`" in docs


def test_I155_a_row_named_after_a_registered_framework_or_mcp_client_is_refused() -> None:
    names = framework_names()
    taken = row_refusal("langgraph", names)
    assert taken is not None and "--sabot-agent-row=langgraph" in taken
    assert "registered framework" in taken and "expected a name of your own" in taken
    mcp = row_refusal("mcp_client", names)
    assert mcp is not None and "sabot mcp" in mcp
    shape = row_refusal("My-Row", names)
    assert shape is not None and "lower-case letters, digits and underscores" in shape
    assert row_refusal(ROW, names) is None


def test_I156_a_mapping_that_names_another_row_is_refused_naming_file_and_field(
        tmp_path: Path) -> None:
    other = _mapping(tmp_path, framework="someone_else")
    said = mapping_refusal(other, ROW)
    assert said is not None
    assert f"--sabot-agent-mapping={other}" in said
    assert "field 'framework'" in said and f"'{ROW}'" in said and "someone_else" in said
    missing = mapping_refusal(tmp_path / "nope.yaml", ROW)
    assert missing is not None and "no file there" in missing
    assert mapping_refusal(_mapping(tmp_path), ROW) is None


def test_I157_agent_env_names_a_set_variable_and_never_the_provider_key() -> None:
    environ = {"MY_AGENT_TOKEN": SECRET, "OPENAI_API_KEY": "sk-something-long"}
    assert env_refusal(["MY_AGENT_TOKEN"], environ) is None
    key = env_refusal(["OPENAI_API_KEY"], environ)
    assert key is not None and "--sabot-agent-env=OPENAI_API_KEY" in key
    assert "provider key stays in the harness" in key
    unset = env_refusal(["NOT_SET_HERE"], environ)
    assert unset is not None and "is not set" in unset
    shape = env_refusal(["BAD-NAME"], environ)
    assert shape is not None and "name of an environment variable" in shape


def test_I158_the_reports_line_names_the_row_and_the_callable() -> None:
    row = OutsideRow(row=ROW, config="default", pipeline="trusted local agent",
                     target="critics.team:run")
    assert row.line == "row my_pipeline: critics.team:run (trusted local agent)"


# ----------------------------------------------------------------- real sessions


@pytest.mark.slow
def test_I155_I156_bad_row_options_are_refused_before_anything_runs(tmp_path: Path) -> None:
    target = _package(tmp_path)
    bad = _mapping(tmp_path, name="bad-act.yaml", act="rejects")
    cases = [
        (("--sabot-agent-row=crewai",), "--sabot-agent-row=crewai"),
        ((f"--sabot-agent-row={ROW}", f"--sabot-agent-mapping={bad}"),
         f"{bad}: field 'revisions.0.acts.0.act'"),
        ((f"--sabot-agent-mapping={_mapping(tmp_path, framework='critics_team_run_x')}",),
         "field 'framework': expected 'critics_team_run'"),
        (("--sabot-agent-env=OPENAI_API_KEY",), "provider key stays in the harness"),
    ]
    for args, words in cases:
        done = _session(tmp_path, f"--sabot-agent={target}", *args)
        text = done.stdout + done.stderr
        assert done.returncode == pytest.ExitCode.USAGE_ERROR, text
        assert words in text, (words, text)
        assert "Traceback" not in text
        assert not (tmp_path / "out").exists() and not (tmp_path / "env.json").exists()
    alone = _session(tmp_path, f"--sabot-agent-row={ROW}")
    assert alone.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--sabot-agent-row describes the row of --sabot-agent" in alone.stdout + alone.stderr


@pytest.mark.slow
def test_I155_to_I158_a_named_row_with_its_own_mapping_and_env_runs_and_reads_back(
        tmp_path: Path) -> None:
    target = _package(tmp_path)
    mapping = _mapping(tmp_path)
    done = _session(tmp_path, f"--sabot-agent={target}", f"--sabot-agent-row={ROW}",
                    f"--sabot-agent-mapping={mapping}", "--sabot-agent-env=MY_AGENT_TOKEN",
                    "--sabot-operator=baseline,O3", "--sabot-model=sim:vigilant",
                    f"--junitxml={tmp_path / 'out' / 'junit.xml'}")
    text = done.stdout + done.stderr
    assert done.returncode == 0, text
    out = tmp_path / "out"
    line = f"row {ROW}: {target} (trusted local agent)"

    # I157: the named variable reached the child, no other did.
    seen = json.loads((tmp_path / "env.json").read_text())
    assert seen == {"token": SECRET, "other": None}

    # I155: the row's name is in cell ids, results rows, RESULTS.md, report.html, JUnit.
    results = json.loads((out / "results.json").read_text())
    assert [r["row"] for r in results["scoreboard"]["rows"]] == [f"{ROW}-default"]
    cells = {c["cell_id"]: c for c in results["cells"]}
    assert set(cells) == {f"{ROW}-default-O3-T1-s11", f"{ROW}-default-baseline-T1-s11"}
    junit = (out / "junit.xml").read_text()
    assert f"{ROW}-default-O3-T1-s11" in junit

    # I156: the row was scored by the given mapping (the shipped one reads no critic).
    fault = cells[f"{ROW}-default-O3-T1-s11"]
    assert cells[f"{ROW}-default-baseline-T1-s11"]["status"] == "passed", cells
    assert fault["detection"] == "DETECTED_HARD", fault
    assert "reject-critic" in {a["row"] for a in fault["acts"]}
    (manifest_file,) = (out / "sessions").glob("*.json")
    manifest = json.loads(manifest_file.read_text())
    assert manifest["agent"] == target and manifest["outside_row"] == ROW
    (adapter,) = manifest["adapters"]
    assert adapter["framework"] == ROW and adapter["kept"] is True
    assert (out / adapter["mapping"]).read_bytes() == mapping.read_bytes()

    # I158: every report names the callable that ran.
    assert results["outside_row"] == {"row": ROW, "config": "default",
                                      "pipeline": "trusted local agent", "target": target}
    assert line in done.stdout
    assert f"> {line}" in (out / "RESULTS.md").read_text()
    assert line in (out / "report.html").read_text()

    # I157: the passed value reached no file of the output (traces, logs, results, JUnit).
    leaked = [str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()
              and SECRET.encode() in p.read_bytes()]
    assert not leaked, leaked
    assert SECRET not in done.stdout + done.stderr
    log = next((out / "cells" / f"{ROW}-default-baseline-T1-s11").glob("agent-*.log"))
    assert "token is [REDACTED]" in log.read_text()

    # The records alone: rescore, report, inspect and export from a fresh process in a
    # directory where the callable cannot be imported, with no option of the agent's.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def sabot(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pytest_sabot.commands.cli", *args],
                              cwd=elsewhere, env=_env(), capture_output=True, text=True,
                              timeout=300, check=False)

    probe = subprocess.run([sys.executable, "-c", "import critics"], cwd=elsewhere,
                           env=_env(), capture_output=True, text=True, check=False)
    assert probe.returncode != 0
    rescored = sabot("rescore", str(out))
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    assert "identical to results.json" in rescored.stdout
    reported = sabot("report", str(out))
    assert reported.returncode == 0, reported.stdout + reported.stderr
    assert line in reported.stdout
    inspected = sabot("inspect", str(out / "cells" / f"{ROW}-default-O3-T1-s11"), "--json")
    assert inspected.returncode == 0, inspected.stdout + inspected.stderr
    assert json.loads(inspected.stdout)["verdict"] == "DETECTED_HARD"
    exported = sabot("export", str(out), "--format", "junit",
                     "--out", str(tmp_path / "exported.xml"))
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert f"{ROW}-default-O3-T1-s11" in (tmp_path / "exported.xml").read_text()
    page = sabot("export", str(out), "--format", "html", "--out", str(tmp_path / "page.html"))
    assert page.returncode == 0, page.stdout + page.stderr
    assert line in (tmp_path / "page.html").read_text()
    for what in (rescored, reported, inspected, exported, page):
        assert "Traceback" not in what.stdout + what.stderr
        assert "validation error" not in what.stdout + what.stderr

    # A results.json written before outside_row existed still rescores identical.
    older = tmp_path / "older"
    shutil.copytree(out, older)
    body = json.loads((older / "results.json").read_text())
    del body["outside_row"]
    (older / "results.json").write_text(json.dumps(body, indent=2))
    rescored_older = sabot("rescore", str(older))
    assert rescored_older.returncode == 0, rescored_older.stdout + rescored_older.stderr
    assert "identical to results.json" in rescored_older.stdout
