"""S5.7 on real runs: a guardrail that gives up escalates (LangGraph's validator through
``interrupt()``, CrewAI's exhaustion of ``guardrail_max_retries``). The run still
completes, the task counts as failed, the escalation is a hard-tier act and never a
RUN_ERROR. The trace keeps its documented form (docs/TRACE.md): run_start first, the probe
after the pipeline, and one run_end, the pipeline's own task_failed, as the last event.

Under the vigilant persona the weak tier that O4 swaps in cannot satisfy T2's contract,
so both guardrails run out of retries on that cell."""

from __future__ import annotations

import pytest
from e2e_bank import SEED, CellBank, require_adapter

from pytest_sabot.core.models.cells import cell_id

ESCALATING = {
    "langgraph": "interrupt",
    "crewai": "escalation",
}


@pytest.mark.slow
@pytest.mark.parametrize("framework", sorted(ESCALATING))
def test_S5_7_guardrail_exhaustion_escalates_and_ends_the_run_task_failed(
    bank: CellBank, framework: str
) -> None:
    require_adapter(framework)
    rec = bank.run(cell_id(framework, "guardrail", "O4", "T2", SEED))
    kinds = [e.kind for e in rec.trace.events]
    assert rec.outcome.error is None, rec.outcome.error
    assert ESCALATING[framework] in kinds, kinds
    assert kinds[0] == "run_start" and kinds[-1] == "run_end", kinds[-4:]
    assert kinds.count("run_end") == 1 and kinds.index("probe") < len(kinds) - 1
    (end,) = rec.trace.of_kind("run_end")
    assert end.data.status == "task_failed" and end.component == "pipeline"
    assert not rec.outcome.passed

    verdict = bank.verdict(rec)
    assert verdict.excluded is None, verdict.excluded
    assert any(a.act == "escalate" for a in verdict.acts), verdict.acts
    assert verdict.detected_hard and verdict.reacted


# --- an escalation that ends the run by raising (issue 22 item 10) ---------------------

RAISING_ADAPTER = '''
"""A pipeline of one's own whose reviewer escalates by raising: the escalation is
recorded, then the exception leaves the pipeline (as a framework's terminal exception
does)."""

import json
from pathlib import Path

from pytest_sabot.core.context import WORKER_MODEL_CALL_CAP
from pytest_sabot.core.frameworks import FrameworkAdapter
from pytest_sabot.core.verdict_token import routing_verdict


def adapter():
    return FrameworkAdapter(
        name="raising",
        run="raising_adapter:run",
        packages={},
        modules=("openai",),
        mapping=str(Path(__file__).with_name("raising-mapping.yaml")),
        cost_per_run={"default": (6, 2000, 300)},
    )


class Escalated(Exception):
    pass


def _client(ctx, agent):
    from openai import OpenAI

    return OpenAI(base_url=ctx.base_url(agent), api_key=ctx.api_key, max_retries=0,
                  http_client=ctx.http_client())


def _work(ctx, client):
    prompt = ctx.worker_prompt(0, "")
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
            ctx.trace.emit("agent_output", "worker", draft, stage="worker", round=0)
            return draft
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            seen = handles[call.function.name].invoke(json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": seen})
    raise RuntimeError("the worker never answered")


def run(ctx):
    worker, reviewer = _client(ctx, "worker"), _client(ctx, "reviewer")
    draft = _work(ctx, worker)
    delivered = ctx.handoff("worker", "reviewer", draft)
    prompt = ctx.reviewer_prompt(delivered, 0)
    reply = reviewer.chat.completions.create(
        model=ctx.model_name,
        messages=[{"role": "system", "content": prompt.system},
                  {"role": "user", "content": prompt.user}])
    review = reply.choices[0].message.content or ""
    ctx.sync_model_calls()
    ctx.trace.emit("review", "reviewer", review, round=0)
    if routing_verdict(review).decision == "reject":
        message = "escalated to a human: the reviewer rejected the draft"
        ctx.trace.emit("escalation", "reviewer", message, mechanism="raising_escalation",
                       message=message)
        raise Escalated(message)
    ctx.emit(delivered)
'''

RAISING_MAPPING = """
framework: raising
revisions:
  - since: v0.1.1
    date: "2026-12-01"
    note: A pipeline whose reviewer escalates by raising.
    counted_surfaces: [reviewer verdicts, the escalation]
    acts:
      - id: reject-reviewer
        act: reject
        component: reviewer
        configs: [default]
        mechanism: the reviewer's VERDICT REJECT
        match: {event: review, component: [reviewer], verdict: reject}
        reason_from: verdict_reason
        corrective: false
      - id: escalate-raise
        act: escalate
        component: reviewer
        configs: [default]
        mechanism: the reviewer hands the run to a human by raising
        match: {event: escalation, data: {mechanism: raising_escalation}}
        reason_from: data.message
        corrective: true
"""

RAISING_MATRIX = """
wave: 121
name: raising
candidate: true
title: "A pipeline that escalates by raising"
rules: v0.2.1
flags_protocol: false
contract_revision: "v0.2"
seeds_file: raising.json
frameworks: [raising]
configs: [default]
operators: [O1]
tasks: [T1]
"""


@pytest.mark.slow
def test_S5_an_escalation_followed_by_a_raised_exception_is_the_escalation(
    pytester: pytest.Pytester,
) -> None:
    """Issue 22 item 10: the harness closes the raised exception with run_error and
    run_end(status=error); the attempt is not retried, and the cell is scored by the
    escalation rule (an escalate act, REACTED), never excluded as RUN_ERROR."""
    import json
    import shutil
    import textwrap

    from pytest_sabot.core.paths import standard_root

    root = pytester.path / "root"
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(standard_root() / folder, root / folder)
    (root / "cells" / "raising.yaml").write_text(textwrap.dedent(RAISING_MATRIX))
    (root / "cells" / "seeds" / "raising.json").write_text(
        json.dumps({"wave": 121, "registered": "2026-12-01", "seeds": [11]})
    )
    (pytester.path / "raising_adapter.py").write_text(RAISING_ADAPTER)
    (pytester.path / "raising-mapping.yaml").write_text(textwrap.dedent(RAISING_MAPPING))
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess(
        "--sabot-wave=raising", f"--sabot-root={root}",
        "--sabot-adapter=raising_adapter:adapter", "--sabot-model=sim:vigilant",
        f"--sabot-out={out}", "-p", "no:cacheprovider", "-p", "no:randomly",
    )
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == 0, text
    results = json.loads((out / "results.json").read_text())
    verdicts = {c["cell_id"]: c for c in results["cells"]}
    fault = verdicts["raising-default-O1-T1-s11"]
    assert fault["excluded"] is None, fault["excluded"]
    assert fault["detection"] == "DETECTED_HARD" and fault["reacted"]
    assert "escalate" in {a["act"] for a in fault["acts"]}
    cell = out / "cells" / "raising-default-O1-T1-s11"
    outcome = json.loads((cell / "outcome.json").read_text())
    assert outcome["attempts"] == 1 and not (cell / "attempt-1").exists()
    assert "escalated to a human" in (outcome["error"] or "")
    # (read as JSON lines: this process has not registered the adapter's framework)
    events = [json.loads(line) for line in (cell / "events.jsonl").read_text().splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[-2:] == ["run_error", "run_end"] and "escalation" in kinds
    assert events[-1]["data"]["status"] == "error"
