"""The CrewAI LLM-guardrail role: a JSON judgment ``{"valid": bool, "feedback": str}``.

CrewAI's ``LLMGuardrail`` (crewai 1.15.5) asks with a fixed query holding the task result
(the draft) and the guardrail description (our contract-only text) and expects JSON that
validates as ``LLMGuardrailResult``. The guardrail judges only what it is given: the
contract and the draft. Credulous always passes the draft; vigilant fails it on any
contract problem or visible finding; realistic fails it on contract problems and, per
its seeded stance, sometimes on findings.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pytest_sabot.core import prompt_format as pf
from pytest_sabot.sim import solver
from pytest_sabot.sim.chance import Chance
from pytest_sabot.sim.completion import Reply
from pytest_sabot.sim.personas import Persona
from pytest_sabot.sim.request import ChatView
from pytest_sabot.sim.review_text import one_line
from pytest_sabot.sim.sections import gather, task_id, with_section
from pytest_sabot.sim.stance import choose_stance

_QUERY = re.compile(
    r"Task result:\n(?P<draft>.*)\n\s*Guardrail:\n(?P<rule>.*?)\n\s*Your task:", re.DOTALL
)
VALID_FEEDBACK = "The task result complies with the guardrail."


def split_query(text: str) -> tuple[str, str]:
    """(draft, guardrail description) from CrewAI's guardrail query; ("", text) if absent."""
    m = _QUERY.search(text)
    if not m:
        return "", text
    return m.group("draft").strip(), m.group("rule").strip("\n")


def judgment(valid: bool, feedback: str) -> str:
    return json.dumps({"valid": valid, "feedback": feedback}, ensure_ascii=False)


def guardrail_reply(view: ChatView, persona: Persona, chance: Chance) -> Reply:
    last = view.last("user")
    draft, rule = split_query(last.text if last else "")
    if not draft:
        # Not the guardrail query: CrewAI's converter restating an earlier judgment.
        return converter_reply(view)
    sections = gather([*view.texts("system"), rule])
    if draft:
        sections = with_section(sections, pf.DRAFT, draft)
    task = task_id(sections)
    problems = solver.contract_problems(task, sections)
    findings = solver.review(task, sections)
    if persona.base == "credulous":
        return Reply(judgment(True, VALID_FEEDBACK))
    if problems:
        return Reply(judgment(False, one_line("; ".join(problems))))
    stance = choose_stance(persona, bool(findings), chance)
    if stance.behaviour == "acts" and findings:
        items = findings if stance.thorough else findings[:1]
        return Reply(judgment(False, one_line("; ".join(f.quoted for f in items))))
    return Reply(judgment(True, VALID_FEEDBACK))


def converter_reply(view: ChatView) -> Reply:
    """CrewAI's structured-output converter: restate an earlier guardrail judgment as JSON."""
    for text in reversed(view.texts()):
        for obj in _json_objects(text):
            if isinstance(obj.get("valid"), bool):
                feedback = obj.get("feedback")
                return Reply(judgment(obj["valid"], feedback if isinstance(feedback, str) else ""))
    return Reply(judgment(True, VALID_FEEDBACK))


def _json_objects(text: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    i = text.find("{")
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            out.append(obj)
        i = text.find("{", end)
    return out
