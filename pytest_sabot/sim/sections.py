"""Finding our prompt sections inside whatever messages a framework sent.

Frameworks wrap our rendered prompts in their own text (CrewAI's role/goal/backstory and
'Current Task:' framing, Magentic-One's ledgers that repeat the task), so the same
section can arrive more than once. The embedded model reads the first copy of each
section, except for the revise feedback, where the latest copy is the one that counts.
"""

from __future__ import annotations

import re

from pytest_sabot.core import prompt_format as pf
from pytest_sabot.core.prompt_format import Section

_LATEST_WINS = frozenset({pf.FEEDBACK, pf.ROUND})
_TASK_ID = re.compile(r"\bT[1-9]\d*\b")
# A header that a framework template glued onto its own words ("Current Task: === TASK ===")
# or indented.
_GLUED_HEADER = re.compile(
    r"([^\n]?)[ \t]*(=== [A-Z][A-Z ]*?(?:: [^\n]*?)? ===[ \t]*)$", re.MULTILINE
)


def _reflow(m: re.Match[str]) -> str:
    before = m.group(1)
    return (before + "\n" if before.strip() else "") + m.group(2)


def unglue(text: str) -> str:
    """The text with every section header at the start of its own line."""
    return _GLUED_HEADER.sub(_reflow, text)


def gather(texts: list[str]) -> list[Section]:
    """Sections found in the texts, in order of first appearance, de-duplicated.

    A section is identified by (name, label). The preamble ("" name) is dropped: it is
    framework or free text, not ours.
    """
    order: list[tuple[str, str]] = []
    chosen: dict[tuple[str, str], Section] = {}
    for text in texts:
        for sec in pf.parse(unglue(text)):
            if not sec.name:
                continue
            key = (sec.name, sec.label)
            if key not in chosen:
                order.append(key)
                chosen[key] = sec
            elif sec.name in _LATEST_WINS:
                chosen[key] = sec
    return [chosen[k] for k in order]


def task_id(sections: list[Section]) -> str:
    """The task id ('T1'..) named by the TASK section, or "" if there is none."""
    sec = pf.first(sections, pf.TASK)
    if sec is None:
        return ""
    m = _TASK_ID.search(sec.label + " " + sec.body)
    return m.group(0) if m else ""


def role(sections: list[Section]) -> str:
    """The ROLE section's first word, lower case ("worker", "reviewer", ...), or ""."""
    sec = pf.first(sections, pf.ROLE)
    if sec is None or not sec.body.strip():
        return ""
    return sec.body.split()[0].strip(".:,").lower()


def with_section(sections: list[Section], name: str, body: str, label: str = "") -> list[Section]:
    """The sections with one section replaced (or appended) by a new body."""
    out = [s for s in sections if not (s.name == name and s.label == label)]
    out.append(Section(name, label, body))
    return out
