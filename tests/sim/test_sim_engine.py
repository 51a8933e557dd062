"""The embedded model's entry point: determinism, the completion shape, odd requests,
the CrewAI guardrail JSON and the Magentic-One ledger JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sim_helpers import chat, message

from pytest_sabot.core import prompt_format as pf
from pytest_sabot.core.errors import REFUSED_MARK, ModelRefused
from pytest_sabot.sim import PERSONAS, SIM_LABEL, parse_persona, respond

TASK_TEXT = pf.render(
    [
        (pf.ROLE, "orchestrator-task"),
        (pf.TASK, "T1 Bench acceptance record"),
        (pf.BRIEF, "Extract one record."),
        (pf.MATERIAL, "work_order.md", "Part: P-3117"),
        (pf.CONTRACT, "output.json: exactly one JSON object"),
    ]
)


def _call(body: dict[str, Any], **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "persona": "realistic",
        "seed": 11,
        "run_key": "cell~a1",
        "agent": "worker",
        "call_index": 0,
    }
    args.update(kw)
    return respond(body, **args)


def test_same_input_gives_byte_identical_output() -> None:
    body = chat(("system", "x"), ("user", TASK_TEXT))
    first = json.dumps(_call(body), sort_keys=True)
    second = json.dumps(_call(json.loads(json.dumps(body))), sort_keys=True)
    assert first == second


def test_run_key_does_not_change_the_answer() -> None:
    body = chat(("user", TASK_TEXT))
    assert _call(body, run_key="cell~a1") == _call(body, run_key="other~a2")


def test_completion_has_the_openai_shape_and_echoes_the_model() -> None:
    out = _call(chat(("user", TASK_TEXT)))
    assert out["object"] == "chat.completion"
    assert out["model"] == "gpt-5.6-terra"
    assert isinstance(out["created"], int)
    assert out["choices"][0]["finish_reason"] == "stop"
    usage = out["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"messages": "nonsense"},
        {"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
        {"model": "m", "messages": [None, {"role": "tool"}]},
    ],
)
def test_I151_an_unknown_request_shape_is_refused_naming_what_is_missing(
    body: dict[str, Any],
) -> None:
    with pytest.raises(ModelRefused) as refused:
        _call(body, agent="someone")
    assert (refused.value.role, refused.value.agent) == ("unknown", "someone")
    assert "ROLE" in refused.value.part
    assert str(refused.value).startswith(REFUSED_MARK)


def test_I151_a_reviewer_request_without_a_draft_is_refused_not_approved() -> None:
    # A pipeline's own judge prompt, with the report pasted in its own words.
    body = chat(("system", "You are a demanding editor. Call Finish when it is ready."),
                ("user", TASK_TEXT + "\nReport to grade:\n{\"part_id\": \"P-3117\"}"))
    with pytest.raises(ModelRefused) as refused:
        _call(body, agent="reviewer")
    assert (refused.value.role, refused.value.agent) == ("reviewer", "reviewer")
    assert "DRAFT" in refused.value.part and "APPROVE" not in str(refused.value)


def test_I151_a_worker_request_naming_no_known_task_is_refused() -> None:
    with pytest.raises(ModelRefused) as refused:
        _call(chat(("user", "Write a haiku about spring.")), agent="worker")
    assert refused.value.role == "worker" and "TASK" in refused.value.part


def test_I151_an_orchestrator_request_outside_magentic_templates_is_refused() -> None:
    with pytest.raises(ModelRefused) as refused:
        _call(chat(("user", TASK_TEXT)), agent="orchestrator")
    assert refused.value.role == "orchestrator" and "Magentic" in refused.value.part


def test_every_published_persona_parses_and_unknown_ones_are_refused() -> None:
    assert {parse_persona(p).name for p in PERSONAS} == set(PERSONAS)
    assert parse_persona("sim:realistic-weak").weak
    with pytest.raises(ValueError, match="persona"):
        parse_persona("paranoid")


def test_label_says_fixture_not_measurement() -> None:
    assert "fixture" in SIM_LABEL and "not a measurement" in SIM_LABEL


LEDGER_KEYS = {
    "is_request_satisfied",
    "is_in_loop",
    "is_progress_being_made",
    "next_speaker",
    "instruction_or_question",
}


def _ledger_prompt(names: str) -> str:
    from autogen_agentchat.teams._group_chat._magentic_one._prompts import (
        ORCHESTRATOR_PROGRESS_LEDGER_PROMPT,
    )

    return ORCHESTRATOR_PROGRESS_LEDGER_PROMPT.format(
        task=TASK_TEXT, team="worker: does the task", names=names
    )


def test_magentic_ledger_json_has_every_key_and_names_the_worker() -> None:
    from autogen_agentchat.teams._group_chat._magentic_one._prompts import LedgerEntry

    body = chat(("user", TASK_TEXT))
    body["messages"].append(
        {"role": "user", "name": "MagenticOneOrchestrator", "content": _ledger_prompt("worker")}
    )
    content = message(_call(body, agent="orchestrator"))["content"]
    ledger = json.loads(content)
    assert set(ledger) == LEDGER_KEYS
    LedgerEntry.model_validate(ledger)
    assert ledger["next_speaker"]["answer"] == "worker"
    assert ledger["is_request_satisfied"]["answer"] is False


def test_guardrail_restates_an_earlier_judgment_for_the_crewai_converter() -> None:
    earlier = '{"valid": false, "feedback": "the artifact is not one JSON object"}'
    body = chat(
        ("system", "Format your final answer according to the following OpenAPI schema: {}"),
        ("user", earlier),
    )
    content = message(_call(body, agent="guardrail"))["content"]
    assert json.loads(content) == json.loads(earlier)


def test_a_framework_template_is_recognised_whatever_the_agent_is_called() -> None:
    body = chat(("user", TASK_TEXT), ("user", _ledger_prompt("worker")))
    ledger = json.loads(message(_call(body, agent="team-manager"))["content"])
    assert set(ledger) == LEDGER_KEYS


def test_magentic_fact_sheet_has_the_four_headings() -> None:
    from autogen_agentchat.teams._group_chat._magentic_one._prompts import (
        ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT,
    )

    body = chat(("user", ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT.format(task=TASK_TEXT)))
    content = message(_call(body, agent="orchestrator"))["content"]
    headings = [
        "1. GIVEN OR VERIFIED FACTS",
        "2. FACTS TO LOOK UP",
        "3. FACTS TO DERIVE",
        "4. EDUCATED GUESSES",
    ]
    assert [
        line for line in content.splitlines() if line[:2] in ("1.", "2.", "3.", "4.")
    ] == headings
