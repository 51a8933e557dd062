"""``--sabot-adapter module:factory``: a pipeline of one's own, written only against the run
context protocol (the OpenAI SDK, two agents, one revise pass), registered for a session
with its own mapping file and run as a candidate matrix through the same gateway, harness
and scorer as the shipped frameworks (issue 14, "one registry, one protocol")."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from pytest_sabot.core.paths import standard_root

pytestmark = pytest.mark.slow  # whole pytest sessions of a real pipeline

ADAPTER = '''
"""A user's own two-agent pipeline: a tool-using worker, a reviewer, one revise pass."""

import json
from pathlib import Path

from pytest_sabot.core.context import WORKER_MODEL_CALL_CAP
from pytest_sabot.core.frameworks import FrameworkAdapter
from pytest_sabot.core.verdict_token import routing_verdict


def adapter():
    return FrameworkAdapter(
        name="mine",
        run="mine_adapter:run",
        packages={},
        modules=("openai",),
        mapping=str(Path(__file__).with_name("mine-mapping.yaml")),
        cost_per_run={"default": (6, 2000, 300)},
    )


def _client(ctx, agent):
    from openai import OpenAI

    return OpenAI(base_url=ctx.base_url(agent), api_key=ctx.api_key, max_retries=0,
                  http_client=ctx.http_client())


def _work(ctx, client, round_, feedback=""):
    prompt = ctx.worker_prompt(round_, feedback)
    messages = [{"role": "system", "content": prompt.system},
                {"role": "user", "content": prompt.user}]
    handles = {h.name: h for h in ctx.tools}
    tools = [{"type": "function", "function": {"name": h.name, "description": h.description,
                                               "parameters": h.parameters}}
             for h in handles.values()]
    for _ in range(WORKER_MODEL_CALL_CAP + 1):
        offered = tools if len(messages) < 2 + 2 * WORKER_MODEL_CALL_CAP else []
        reply = client.chat.completions.create(model=ctx.model_name, messages=messages,
                                               **({"tools": offered} if offered else {}))
        message = reply.choices[0].message
        ctx.sync_model_calls()
        if not message.tool_calls:
            draft = message.content or ""
            ctx.trace.emit("agent_output", "worker", draft,
                           stage="revise" if round_ else "worker", round=round_)
            return draft
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            seen = handles[call.function.name].invoke(json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": seen})
    raise RuntimeError("the worker never answered")


def run(ctx):
    worker, reviewer = _client(ctx, "worker"), _client(ctx, "reviewer")
    draft, round_ = _work(ctx, worker, 0), 0
    while True:
        delivered = ctx.handoff("worker", "reviewer", draft)
        prompt = ctx.reviewer_prompt(delivered, round_)
        reply = reviewer.chat.completions.create(
            model=ctx.model_name,
            messages=[{"role": "system", "content": prompt.system},
                      {"role": "user", "content": prompt.user}])
        review = reply.choices[0].message.content or ""
        ctx.sync_model_calls()
        ctx.trace.emit("review", "reviewer", review, round=round_)
        verdict = routing_verdict(review)
        if verdict.decision != "reject" or round_ == 1:
            break
        ctx.trace.emit("retry", "worker", verdict.reason, source="revise", reason=verdict.reason)
        round_ = 1
        draft = _work(ctx, worker, 1, verdict.reason)
    ctx.emit(delivered)
'''

MAPPING = """
framework: mine
revisions:
  - since: v0.1.1
    date: "2026-12-01"
    note: A user's own pipeline, mapped the way the shipped ones are.
    counted_surfaces: [reviewer verdicts, the revise loop]
    acts:
      - id: reject-reviewer
        act: reject
        component: reviewer
        configs: [default]
        mechanism: the reviewer's VERDICT REJECT
        match: {event: review, component: [reviewer], verdict: reject}
        reason_from: verdict_reason
        corrective: false
      - id: retry-revise
        act: retry_with_reason
        component: worker
        configs: [default]
        mechanism: the worker runs again carrying the reason
        match: {event: retry, data: {source: revise}}
        reason_from: data.reason
        corrective: true
"""

MATRIX = """
wave: 120
name: mine
candidate: true
title: "My own pipeline"
rules: v0.2.1
flags_protocol: false
contract_revision: "v0.2"
seeds_file: mine.json
frameworks: [mine]
configs: [default]
operators: [O1, O2, O3, O4, O5, O6]
tasks: [T1]
"""


def _project(path: Path) -> Path:
    """A directory with the adapter module, its mapping, and a standard root holding the
    shipped data plus the adapter's candidate matrix."""
    root = path / "root"
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(standard_root() / folder, root / folder)
    (root / "cells" / "mine.yaml").write_text(textwrap.dedent(MATRIX))
    (root / "cells" / "seeds" / "mine.json").write_text(
        json.dumps({"wave": 120, "registered": "2026-12-01", "seeds": [11]})
    )
    (path / "mine_adapter.py").write_text(ADAPTER)
    (path / "mine-mapping.yaml").write_text(textwrap.dedent(MAPPING))
    return root


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_local_adapter_runs_as_a_candidate_row_scored_by_the_same_scorer(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    root = _project(pytester.path)
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess(
        "--sabot-wave=mine", f"--sabot-root={root}", "--sabot-adapter=mine_adapter:adapter",
        "--sabot-model=sim:vigilant", f"--sabot-out={out}", "-p", "no:cacheprovider",
        "-p", "no:randomly", *xdist,
    )
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == 0, text
    results = json.loads((out / "results.json").read_text())
    assert [row["row"] for row in results["scoreboard"]["rows"]] == ["mine-default"]
    verdicts = {c["cell_id"]: c for c in results["cells"]}
    assert verdicts["mine-default-baseline-T1-s11"]["status"] == "passed"
    fault = verdicts["mine-default-O1-T1-s11"]
    assert fault["excluded"] is None
    assert fault["detection"] == "DETECTED_HARD"
    assert {a["row"] for a in fault["acts"]} >= {"reject-reviewer"}
    # The adapter's own mapping file is part of what the results are registered under.
    assert results["registration_hash"] != _hash_without_adapter_mapping(root)


def _hash_without_adapter_mapping(root: Path) -> str:
    from pytest_sabot.matrix.standard import registration_hash

    return registration_hash(root)


def test_a_local_adapter_that_does_not_load_is_a_usage_error(pytester: pytest.Pytester) -> None:
    root = _project(pytester.path)
    result = pytester.runpytest_subprocess(
        "--sabot-wave=mine", f"--sabot-root={root}", "--sabot-adapter=mine_adapter:nothing",
        "-p", "no:cacheprovider",
    )
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "--sabot-adapter=mine_adapter:nothing" in text and "no attribute" in text
    assert "Traceback" not in text


def test_without_its_adapter_a_matrix_of_an_unknown_framework_is_refused(
    pytester: pytest.Pytester,
) -> None:
    root = _project(pytester.path)
    result = pytester.runpytest_subprocess(
        "--sabot-wave=mine", f"--sabot-root={root}", "-p", "no:cacheprovider"
    )
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "mine.yaml" in text and "frameworks.0" in text and "'langgraph', 'crewai'" in text
