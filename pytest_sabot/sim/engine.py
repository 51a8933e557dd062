"""The embedded model's entry point: one chat-completion request in, one ChatCompletion out.

The gateway calls :func:`respond` for every keyless model call. The answering role comes
from the agent name in the URL path (worker, reviewer or critic, guardrail, orchestrator),
else from the request itself (a framework template such as Magentic-One's progress ledger
or CrewAI's guardrail query, else our ROLE section). The persona decides how the reviewing
roles act, and every choice is seeded from (seed, persona, agent, a digest of the
run-independent request content). The same inputs always give
byte-identical output. What it returns is a fixture of the embedded model, never a
measurement of any LLM.
"""

from __future__ import annotations

from typing import Any

from pytest_sabot.core.errors import ModelRefused
from pytest_sabot.sim.chance import Chance
from pytest_sabot.sim.completion import Reply, build_completion, id_key
from pytest_sabot.sim.frames import Frame, recognise
from pytest_sabot.sim.guardrail import guardrail_reply
from pytest_sabot.sim.orchestrator import orchestrator_reply
from pytest_sabot.sim.personas import Persona, parse_persona
from pytest_sabot.sim.request import ChatView, read_request, request_digest
from pytest_sabot.sim.reviewer import reviewer_reply
from pytest_sabot.sim.sections import gather, role
from pytest_sabot.sim.worker import worker_reply

NO_ROLE = (
    "its role: an agent name containing worker, reviewer, critic, guardrail or "
    "orchestrator, a framework template it knows, or a === ROLE === section"
)
NO_TEMPLATE = "a Magentic-One ledger, plan or fact-sheet prompt (the orchestrator's templates)"

_AGENT_ROLES: tuple[tuple[str, str], ...] = (
    ("orchestrator", "orchestrator"),
    ("guardrail", "guardrail"),
    ("reviewer", "reviewer"),
    ("critic", "reviewer"),
    ("worker", "worker"),
)


def role_for(agent: str, view: ChatView, frame: Frame) -> str:
    """Which role answers: the agent name first, then a framework template, then ROLE."""
    name = agent.lower()
    for needle, found in _AGENT_ROLES:
        if needle in name:
            return found
    if frame.startswith("magentic_"):
        return "orchestrator"
    if frame in ("crewai_guardrail", "crewai_convert"):
        return "guardrail"
    declared = role(gather(view.texts("system", "developer", "user")))
    return declared if declared in ("worker", "reviewer", "guardrail") else ""


def answer(view: ChatView, persona: Persona, chance: Chance, agent: str, seed: int = 0) -> Reply:
    """The reply of the role that answers this request; a request it does not recognise
    raises ModelRefused (SPEC I151)."""
    last = view.last("user", "system", "developer")
    frame = recognise(last.text if last else "")
    which = role_for(agent, view, frame)
    if which == "orchestrator":
        if frame.startswith("magentic_"):
            return orchestrator_reply(frame, view, persona, chance)
        raise ModelRefused("orchestrator", agent, NO_TEMPLATE)
    if which == "guardrail":
        return guardrail_reply(view, persona, chance)
    if which == "reviewer":
        return reviewer_reply(view, persona, chance, agent)
    if which == "worker":
        return worker_reply(view, persona, seed, agent)
    raise ModelRefused("unknown", agent, NO_ROLE)


def respond(
    request: dict[str, Any],
    *,
    persona: str,
    seed: int,
    run_key: str,
    agent: str,
    call_index: int,
) -> dict[str, Any]:
    """Answer one chat-completion request as the embedded model.

    ``request`` is the OpenAI request body as the client sent it (stream flags are
    ignored: the gateway streams the returned completion itself). ``persona`` is one of
    ``pytest_sabot.sim.PERSONAS`` (a leading ``sim:`` is accepted); an unknown persona is a
    ValueError. ``run_key`` only serves to keep run-specific noise out of the seed. A
    request it does not recognise raises ModelRefused: it never answers as if it had done
    the work.
    """
    who = parse_persona(persona)
    view = read_request(request)
    digest = request_digest(view, run_key)
    chance = Chance.for_call(seed=seed, persona=who.name, agent=agent, digest=digest)
    reply = answer(view, who, chance, agent, seed)
    return build_completion(view, reply, key=id_key(agent, digest), call_index=call_index)
