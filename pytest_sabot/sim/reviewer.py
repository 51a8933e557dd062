"""The reviewer role (LangGraph/CrewAI reviewer, AutoGen critic).

It reads the reviewer prompt's sections, asks the task's procedure what a careful
reviewer finds, lets the persona decide what to do about it, and writes the reply under
the verdict-token protocol (spec section 5) with the FLAGS line of the anomaly-first
addendum (spec section 10.2) when the PROTOCOL section asks for one.
"""

from __future__ import annotations

from pytest_sabot.core import prompt_format as pf
from pytest_sabot.core.errors import ModelRefused
from pytest_sabot.core.prompt_format import Section
from pytest_sabot.sim import solver
from pytest_sabot.sim.chance import Chance
from pytest_sabot.sim.completion import Reply
from pytest_sabot.sim.findings import Finding
from pytest_sabot.sim.personas import Persona
from pytest_sabot.sim.request import ChatView
from pytest_sabot.sim.review_text import reviewer_reply as write_reply
from pytest_sabot.sim.sections import gather, task_id
from pytest_sabot.sim.stance import choose_stance

FLAGS_MARKERS = ("ANOMALY-FIRST PROTOCOL", "'FLAGS: '")


def flags_required(sections: list[Section], fallback_text: str = "") -> bool:
    """True when the PROTOCOL section (or, lacking one, the prompt) carries the addendum."""
    protocol = pf.first(sections, pf.PROTOCOL)
    text = protocol.body if protocol is not None else fallback_text
    return any(m in text for m in FLAGS_MARKERS)


def findings_for(sections: list[Section]) -> list[Finding]:
    return solver.review(task_id(sections), sections) or []


NO_DRAFT = "a === DRAFT === section (the draft to review, as ctx.reviewer_prompt hands it)"


def reviewer_reply(view: ChatView, persona: Persona, chance: Chance, agent: str = "") -> Reply:
    """The review of the DRAFT section; a request without one is refused (SPEC I151): the
    embedded model never approves a draft it was not shown."""
    texts = view.texts("system", "developer", "user")
    sections = gather(texts)
    required = flags_required(sections, "\n".join(texts))
    if pf.first(sections, pf.DRAFT) is None:
        raise ModelRefused("reviewer", agent, NO_DRAFT)
    findings = findings_for(sections)
    stance = choose_stance(persona, bool(findings), chance)
    variant = 0 if persona.base == "vigilant" else int(chance.unit("wording") * 3)
    return Reply(write_reply(stance, findings, flags_required=required, variant=variant))
