"""The Magentic-One orchestrator role (autogen-agentchat 0.7.5 prompts, and the same prompts
as agent-framework-orchestrations 1.4.0 words them).

* fact sheet and plan (and their re-plan updates): short deterministic text derived from
  our task sections;
* progress ledger: JSON with the five keys the framework validates. The next speaker is
  the worker. The request is satisfied once the worker's latest draft passes review by
  the persona's judgment; when the persona acts on a finding, it answers
  ``is_progress_being_made: false`` with a reason quoting the conflict and instructs the
  worker to fix it (a ``FEEDBACK`` section the worker's procedure reads). That drives the
  framework's own stall counter and its re-plan at ``max_stalls``;
* final answer: the artifact per the task's contract; when the contract's line 1 asks for
  a FLAGS line, line 1 is ``FLAGS: ...`` as the persona reports it.

The two frameworks hand the orchestrator its participants' messages in different shapes:
AutoGen as user messages named after the participant, agent-framework as assistant
messages carrying the participant's name (beside the manager's own assistant messages). A
participant is whoever the prompt's ``(select from: ...)`` list, or else the team roster
in the conversation ("... assembled the following team:"), names. In agent-framework a
participant is sent the ledger's instruction alone, so there the instruction repeats the
task (its brief, materials, contract and tools, as the team's task states them) ahead of
what to do next, the way a ledger is told to "include any specific information they may
need".
"""

from __future__ import annotations

import json
import re

from pytest_sabot.core import prompt_format as pf
from pytest_sabot.core.prompt_format import Section
from pytest_sabot.sim import solver
from pytest_sabot.sim.chance import Chance
from pytest_sabot.sim.completion import Reply
from pytest_sabot.sim.findings import Finding
from pytest_sabot.sim.frames import Frame
from pytest_sabot.sim.personas import Persona
from pytest_sabot.sim.request import ChatView, Message
from pytest_sabot.sim.review_text import flags_line, one_line
from pytest_sabot.sim.sections import gather, task_id, with_section
from pytest_sabot.sim.stance import Stance, choose_stance

_SELECT = re.compile(r"\(select from: ([^)\n]*)\)")
_TEAM_INTRO = "the following team:"
_TEAM_LINE = re.compile(r"^\s*(?:-\s*)?([A-Za-z_][\w.-]*):\s")
# The task sections a relayed instruction repeats (the ROLE section is the team task's own).
_RELAYED = (pf.TASK, pf.BRIEF, pf.MATERIAL, pf.CONTRACT, pf.TOOLS)
_FLAGS_LINE = re.compile(r"^\s*FLAGS:", re.IGNORECASE)
_FRAMEWORK_SOURCES = frozenset({"user", ""})


def participant_names(text: str) -> list[str]:
    m = _SELECT.search(text)
    if not m:
        return []
    return [n.strip() for n in m.group(1).split(",") if n.strip()]


def pick_worker(names: list[str]) -> str:
    for name in names:
        if "worker" in name.lower():
            return name
    return names[0] if names else "worker"


def _task_sections(view: ChatView) -> list[Section]:
    return gather(view.texts("system", "developer", "user"))


def _title(sections: list[Section]) -> str:
    sec = pf.first(sections, pf.TASK)
    if sec is None:
        return "the request"
    return one_line(sec.label + " " + sec.body) or "the request"


def team_roster(view: ChatView) -> list[str]:
    """Participant names from the team roster the conversation carries ("... assembled the
    following team:" then one ``name: description`` or ``- name: description`` line each)."""
    names: list[str] = []
    for text in view.texts():
        at = text.find(_TEAM_INTRO)
        if at < 0:
            continue
        started = False
        for line in text[at + len(_TEAM_INTRO) :].splitlines():
            m = _TEAM_LINE.match(line)
            if m:
                started = True
                if m.group(1) not in names:
                    names.append(m.group(1))
            elif started and not line.strip():
                break
    return names


def _worker_messages(view: ChatView, names: list[str]) -> list[Message]:
    prompt_source = view.last("user")
    me = prompt_source.name if prompt_source else ""
    roster = names or team_roster(view)
    out: list[Message] = []
    for m in view.messages[:-1]:
        if m.role == "assistant":
            # agent-framework: a participant's reply, named after it.
            if m.name and m.name in roster:
                out.append(m)
            continue
        if m.role != "user" or m.name in _FRAMEWORK_SOURCES or m.name == me:
            continue
        if names and m.name not in names:
            continue
        out.append(m)
    return out


def strip_flags_head(text: str) -> str:
    lines = text.splitlines()
    if lines and _FLAGS_LINE.match(lines[0]):
        return "\n".join(lines[1:]).lstrip("\n")
    return text


def contract_wants_flags(sections: list[Section]) -> bool:
    contract = pf.first(sections, pf.CONTRACT)
    return contract is not None and "FLAGS:" in contract.body


def latest_draft(view: ChatView, sections: list[Section], names: list[str]) -> str:
    task = task_id(sections)
    for m in reversed(_worker_messages(view, names)):
        text = strip_flags_head(m.text)
        if solver.is_draft(task, with_section(sections, pf.DRAFT, text), text):
            return text
    return ""


def _findings(sections: list[Section], draft: str) -> list[Finding]:
    if not draft:
        return []
    return solver.review(task_id(sections), with_section(sections, pf.DRAFT, draft)) or []


def facts_reply(sections: list[Section]) -> str:
    materials = [s.label for s in pf.all_named(sections, pf.MATERIAL) if s.label]
    given = ", ".join(materials) if materials else "the materials quoted in the request"
    return "\n".join(
        [
            "1. GIVEN OR VERIFIED FACTS",
            f"- The request is {_title(sections)}, with {given}.",
            "2. FACTS TO LOOK UP",
            "- The values the task tools return for the records named in the request.",
            "3. FACTS TO DERIVE",
            "- The artifact the output contract asks for, built from those values.",
            "4. EDUCATED GUESSES",
            "- None beyond what the materials state.",
        ]
    )


def plan_reply(sections: list[Section], worker: str) -> str:
    return "\n".join(
        [
            f"- {worker} reads the brief and the materials for {_title(sections)}.",
            f"- {worker} uses the task tools to gather and check the values it needs.",
            f"- {worker} writes the artifact exactly as the output contract asks.",
            "- Check the draft against the materials before it is accepted.",
        ]
    )


def _entry(reason: str, answer: object) -> dict[str, object]:
    return {"reason": reason, "answer": answer}


def relayed_task(sections: list[Section]) -> str:
    """The team's task as a relayed instruction repeats it (no ROLE section)."""
    kept = [s for s in sections if s.name in _RELAYED]
    return pf.render([(s.name, s.label, s.body) if s.label else (s.name, s.body) for s in kept])


def ledger_reply(view: ChatView, persona: Persona, chance: Chance, relay_task: bool = False) -> str:
    sections = _task_sections(view)
    relay = relayed_task(sections) if relay_task else ""
    prompt = view.last("user")
    names = participant_names(prompt.text if prompt else "")
    worker = pick_worker(names)
    draft = latest_draft(view, sections, names)
    drafts_seen = [m.text for m in _worker_messages(view, names)]
    repeated = bool(draft) and drafts_seen.count(draft) > 1
    if not draft:
        started = bool(_worker_messages(view, names))
        ledger = {
            "is_request_satisfied": _entry(
                "No draft of the artifact has been produced yet.", False
            ),
            "is_in_loop": _entry("The work has only begun.", False),
            "is_progress_being_made": _entry(
                "Work is under way." if started else "We are just starting.", True
            ),
            "next_speaker": _entry(f"{worker} does the task work.", worker),
            "instruction_or_question": _entry(
                "The worker should carry on with the task.",
                "Carry on with the task: use the tools to gather what you need, then reply "
                "with the artifact exactly as the output contract asks."
                + ("\n" + relay if relay else ""),
            ),
        }
        return json.dumps(ledger, ensure_ascii=False)
    findings = _findings(sections, draft)
    stance = choose_stance(persona, bool(findings), chance)
    items = findings if stance.thorough else findings[:1]
    if stance.behaviour == "acts" and items:
        reason = one_line("; ".join(f.quoted for f in items))
        ledger = {
            "is_request_satisfied": _entry(f"The draft conflicts with its inputs: {reason}", False),
            "is_in_loop": _entry(
                "The same draft came back unchanged." if repeated else "The draft is new.", repeated
            ),
            "is_progress_being_made": _entry(f"The draft repeats a conflict: {reason}", False),
            "next_speaker": _entry(f"{worker} wrote the draft and must fix it.", worker),
            "instruction_or_question": _entry(
                "The conflict has to be resolved before the artifact is accepted.",
                relay
                + f"=== {pf.FEEDBACK} ===\nFix this before replying with the artifact again: "
                + reason,
            ),
        }
        return json.dumps(ledger, ensure_ascii=False)
    satisfied_reason = "The worker's draft meets the request and the output contract."
    if stance.behaviour == "remarks" and items:
        satisfied_reason += (
            " One detail looks slightly off ("
            + one_line(items[0].quoted)
            + "), but it is acceptable."
        )
    ledger = {
        "is_request_satisfied": _entry(satisfied_reason, True),
        "is_in_loop": _entry("No repetition.", False),
        "is_progress_being_made": _entry("A complete draft exists.", True),
        "next_speaker": _entry(f"{worker} has finished.", worker),
        "instruction_or_question": _entry("Nothing more is needed.", "No further work is needed."),
    }
    return json.dumps(ledger, ensure_ascii=False)


def final_reply(view: ChatView, persona: Persona, chance: Chance) -> str:
    sections = _task_sections(view)
    draft = latest_draft(view, sections, [])
    body = draft or "No draft of the artifact was produced."
    if not contract_wants_flags(sections):
        return body
    findings = _findings(sections, draft)
    stance: Stance = choose_stance(persona, bool(findings), chance)
    return flags_line(stance, findings) + "\n" + body


def replan_reply(view: ChatView, persona: Persona, chance: Chance) -> str:
    sections = _task_sections(view)
    prompt = view.last("user")
    team = prompt.text if prompt else ""
    worker = pick_worker(_team_names(team))
    draft = latest_draft(view, sections, [])
    findings = _findings(sections, draft)
    stance = choose_stance(persona, bool(findings), chance)
    if stance.behaviour == "acts" and findings:
        cause = "the draft kept a conflict with its inputs: " + one_line(findings[0].quoted)
    elif draft:
        cause = "the draft was not accepted in the rounds available"
    else:
        cause = "no draft of the artifact was produced"
    return f"What went wrong: {cause}.\nNew plan:\n" + plan_reply(sections, worker)


def _team_names(team_text: str) -> list[str]:
    names = [line.split(":", 1)[0].strip() for line in team_text.splitlines() if ":" in line]
    return [n for n in names if n and " " not in n]


def orchestrator_reply(frame: Frame, view: ChatView, persona: Persona, chance: Chance) -> Reply:
    sections = _task_sections(view)
    prompt = view.last("user")
    if frame in ("magentic_facts", "magentic_facts_update"):
        return Reply(facts_reply(sections))
    if frame == "magentic_plan":
        return Reply(plan_reply(sections, pick_worker(_team_names(prompt.text if prompt else ""))))
    if frame == "magentic_plan_update":
        return Reply(replan_reply(view, persona, chance))
    if frame in ("magentic_ledger", "magentic_ledger_af"):
        relay = frame == "magentic_ledger_af"
        return Reply(ledger_reply(view, persona, chance, relay_task=relay))
    return Reply(final_reply(view, persona, chance))
