"""Recognising the fixed templates frameworks wrap around our prompts.

The embedded model answers our own sectioned prompts, but some calls come from a
framework's internal machinery with its own wording: the Magentic-One orchestrator's
fact sheet, plan, progress ledger, re-plan and final-answer prompts (autogen-agentchat
0.7.5, ``_magentic_one/_prompts.py``), CrewAI's LLM guardrail query and its structured
output converter (crewai 1.15.5, ``tasks/llm_guardrail.py``, ``utilities/converter.py``),
and CrewAI's text (ReAct) tool format. Each is recognised by phrases that are fixed in
the pinned release, looked for in the last user-side message.

agent-framework's Magentic orchestration (agent-framework-orchestrations 1.4.0,
``_magentic.py``) carries the same prompts, reworded in places; the phrases below occur in
both. Its progress-ledger prompt is told apart (``magentic_ledger_af``) because the two
frameworks relay the ledger's instruction differently: an AutoGen participant reads the
whole group thread, while an agent-framework participant is sent the instruction alone
(``_send_request_to_participant``), so the instruction is all it learns of the task.
"""

from __future__ import annotations

from typing import Literal

Frame = Literal[
    "magentic_facts",
    "magentic_plan",
    "magentic_ledger",
    "magentic_ledger_af",
    "magentic_facts_update",
    "magentic_plan_update",
    "magentic_final",
    "crewai_guardrail",
    "crewai_convert",
    "plain",
]

# (frame, phrases that must all occur), checked in order; the first match wins.
_MARKERS: tuple[tuple[Frame, tuple[str, ...]], ...] = (
    (
        "magentic_ledger_af",
        (
            "Is the request fully satisfied?",
            "is_request_satisfied",
            "repeating the same requests and or getting the same responses",
        ),
    ),
    ("magentic_ledger", ("Is the request fully satisfied?", "is_request_satisfied")),
    ("magentic_facts_update", ("Please rewrite the following fact sheet",)),
    ("magentic_plan_update", ("Please briefly explain what went wrong on this last run",)),
    ("magentic_facts", ("please answer the following pre-survey",)),
    ("magentic_plan", ("please devise a short bullet-point plan",)),
    ("magentic_final", ("provide the final answer to the original request",)),
    ("crewai_guardrail", ("Ensure the following task result complies with the given guardrail",)),
    ("crewai_convert", ("Format your final answer according to the following OpenAPI schema",)),
)

# CrewAI's text tool format (used only when native function calling is off).
REACT_MARKERS = ("Action Input:", "IMPORTANT: Use the following format in your response:")


def recognise(prompt: str) -> Frame:
    """The framework template the prompt text was written from, or "plain"."""
    for frame, phrases in _MARKERS:
        if all(p in prompt for p in phrases):
            return frame
    return "plain"


def is_react(system_text: str) -> bool:
    """True when CrewAI asked for its text tool format instead of native tool calls."""
    return all(m in system_text for m in REACT_MARKERS)
