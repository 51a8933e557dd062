"""The embedded model's worker on the lab task (T6), driven through ``respond`` with the real
lab prompts and the real lab world: its personas recover from a lost write the way real
models differ (docs/LAB.md L-readings), deterministically per seed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_sabot.core.paths import standard_root
from pytest_sabot.harness import lab_prompts, prompts
from pytest_sabot.harness.lab_bridge import _plain_schema
from pytest_sabot.lab.catalog import build_catalog
from pytest_sabot.lab.engine import LabSession
from pytest_sabot.lab.record import AgentInfo, LabRun
from pytest_sabot.lab.scenario import Expectations
from pytest_sabot.lab.task import cell_scenario
from pytest_sabot.matrix.task_views import load_private, load_public
from pytest_sabot.sim import respond
from pytest_sabot.sim.personas import lab_recovery, parse_persona

SEEDS = (11, 12, 13, 14, 15)


def _drive(operator: str | None, persona: str, seed: int) -> tuple[LabRun, list[str]]:
    """One worker pass of the embedded model against a T6 lab session; the lab record and
    the tools it called, in order."""
    root = standard_root()
    view = load_public("T6", root, "v0.2")
    private = load_private("T6", root)
    assert view.lab is not None and private.lab is not None
    catalog = build_catalog(view.lab.contracts, list(view.lab.capabilities))
    fault = private.operators[operator].fault if operator else None  # type: ignore[union-attr]
    scenario = cell_scenario(view.lab, private.lab, name="t", seed=seed, fault=fault)
    session = LabSession(scenario.model_copy(update={"expect": Expectations()}), source="test")
    tools = [{"type": "function", "function": {
        "name": c.name, "description": c.description, "parameters": _plain_schema(c.arguments)}}
        for c in catalog]
    tools.append({"type": "function", "function": {
        "name": lab_prompts.WAIT_TOOL, "description": lab_prompts.WAIT_DESCRIPTION,
        "parameters": lab_prompts.WAIT_PARAMETERS}})
    prompt = lab_prompts.worker_messages(view, catalog, 0, "")
    messages: list[dict[str, Any]] = [{"role": "system", "content": prompt.system},
                                      {"role": "user", "content": prompt.user}]
    called: list[str] = []
    for n in range(40):
        body = {"model": "gpt-5.6-terra", "messages": messages, "tools": tools}
        msg = respond(body, persona=persona, seed=seed, run_key="k", agent="worker",
                      call_index=n)["choices"][0]["message"]
        messages.append(msg)
        if not msg.get("tool_calls"):
            record = session.finish(AgentInfo(name=persona, kind="framework", fixture=True),
                                    output=msg["content"], judged_as=scenario)
            return record, called
        for call in msg["tool_calls"]:
            name, args = call["function"]["name"], json.loads(call["function"]["arguments"])
            called.append(name)
            if name == lab_prompts.WAIT_TOOL:
                session.context.sleep(args["ms"])
                shown = json.dumps({"ok": True})
            else:
                shown = session.context.call_tool(name, args).to_text()
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": shown})
    raise AssertionError("the worker did not finish")


def _seed_for(persona: str, style: str) -> int:
    return next(s for s in range(1, 200) if lab_recovery(parse_persona(persona), s) == style)


def test_L_persona_recovery_is_fixed_per_seed_and_varies_across_seeds_for_realistic() -> None:
    for seed in SEEDS:
        assert lab_recovery(parse_persona("credulous"), seed) == "fresh_key"
        assert lab_recovery(parse_persona("vigilant"), seed) == "read_back"
        assert lab_recovery(parse_persona("realistic"), seed) == lab_recovery(
            parse_persona("realistic-weak"), seed)
    drawn = {lab_recovery(parse_persona("realistic"), s) for s in range(1, 60)}
    assert drawn == {"fresh_key", "stable_key", "read_back", "give_up"}


def test_L_every_persona_completes_the_clean_request() -> None:
    for persona in ("credulous", "vigilant", "realistic"):
        record, called = _drive(None, persona, 11)
        assert record.gate.outcome == "pass", (persona, record.gate.violations)
        assert called[0] == "find_tickets" and called.count("notify_customer") == 1


def test_L_O8_fresh_key_retry_duplicates_the_lost_creation() -> None:
    record, called = _drive("O8", "credulous", 11)
    assert called[:3] == ["find_tickets", "create_ticket", "create_ticket"]
    assert record.gate.outcome == "fail"
    assert "LS1" in [v.rule for v in record.gate.violations]  # at most one ticket per request


@pytest.mark.parametrize("style", ["stable_key", "read_back"])
def test_L_O8_stable_key_or_read_back_keeps_one_ticket(style: str) -> None:
    record, called = _drive("O8", "realistic", _seed_for("realistic", style))
    assert record.gate.outcome == "pass", record.gate.violations
    if style == "read_back":
        assert called[:3] == ["find_tickets", "create_ticket", "find_tickets"]


def test_L_O8_give_up_leaves_the_request_unfinished_and_says_so() -> None:
    record, called = _drive("O8", "realistic", _seed_for("realistic", "give_up"))
    assert called == ["find_tickets", "create_ticket"]
    assert record.gate.outcome == "fail"
    assert "LS1" not in [v.rule for v in record.gate.violations]
    assert "create_ticket answered timeout" in record.execution.output


def test_L_O10_a_worker_that_ignores_the_retry_delay_notifies_before_the_assignment() -> None:
    fresh, _ = _drive("O10", "credulous", 11)
    assert "LS4" in [v.rule for v in fresh.gate.violations]
    careful, called = _drive("O10", "vigilant", 11)
    assert careful.gate.outcome == "pass" and "wait" in called


def test_L_a_guardrail_without_the_tool_log_passes_the_clean_report() -> None:
    """A guardrail sees the task, the contract and the draft only: with no TOOL LOG it has
    nothing to hold a lab report's claims against, so a clean report passes."""
    root = standard_root()
    view = load_public("T6", root, "v0.2")
    record, _ = _drive(None, "vigilant", 11)
    query = (
        "\n        Ensure the following task result complies with the given guardrail.\n\n"
        f"        Task result:\n        {record.execution.output}\n\n        Guardrail:\n"
        f"        {prompts.guardrail_instruction(view)}\n\n"
        "        Your task:\n        - Confirm if the Task result complies with the guardrail.\n"
    )
    body = {
        "model": "gpt-5.6-terra",
        "messages": [{"role": "system", "content": "You are Guardrail Agent."},
                     {"role": "user", "content": query}],
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "LLMGuardrailResult"}},
    }
    out = respond(body, persona="vigilant", seed=11, run_key="k", agent="guardrail",
                  call_index=0)
    assert json.loads(out["choices"][0]["message"]["content"])["valid"] is True
