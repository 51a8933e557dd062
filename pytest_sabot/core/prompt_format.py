"""The sectioned prompt format shared by the harness (which renders prompts from a task's
public view) and the embedded model (which reads them back from the messages it is sent).

A prompt is plain text made of sections. Each section starts with a header line

    === NAME ===            or    === NAME: label ===

and runs until the next header or the end of the text. Names are upper case words; the
label is free text (a material's file name, a tool name). Text before the first header is
kept as a section named "" (the preamble). Framework templates may wrap a rendered prompt
with their own words; parsing still finds every section inside it.

Section names in use (one place, so both sides agree):
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ROLE = "ROLE"  # worker | reviewer | guardrail | orchestrator-task
TASK = "TASK"  # task id and title, e.g. "T1 Calibration records"
BRIEF = "BRIEF"  # what to do
MATERIAL = "MATERIAL"  # label = material name; body = the document as this agent sees it
CONTRACT = "CONTRACT"  # the published output contract
TOOLS = "TOOLS"  # how to use the task's tools
DRAFT = "DRAFT"  # the artifact handed to a reviewer / guardrail
TOOL_LOG = "TOOL LOG"  # the worker's tool calls and the observations it was shown
WORKSPACE = "WORKSPACE"  # the harness's listing of the workspace after the worker stage
FEEDBACK = "FEEDBACK"  # what a revise pass carries: the rejection text, or the failures
PROTOCOL = "PROTOCOL"  # verdict-token protocol and, in wave 2+, the FLAGS addendum
ROUND = "ROUND"  # 0 for the first pass, 1 for the revise pass

_HEADER = re.compile(r"^=== ([A-Z][A-Z ]*?)(?:: (.*?))? ===\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Section:
    name: str
    label: str
    body: str


def render(sections: list[tuple[str, str] | tuple[str, str, str]]) -> str:
    """Render (name, body) or (name, label, body) tuples into prompt text."""
    out: list[str] = []
    for item in sections:
        if len(item) == 2:
            name, body = item
            label = ""
        else:
            name, label, body = item
        header = f"=== {name}: {label} ===" if label else f"=== {name} ==="
        out.append(header)
        out.append(body.rstrip("\n"))
    return "\n".join(out) + "\n"


def parse(text: str) -> list[Section]:
    """Split text into sections, in order. Bodies are stripped of surrounding blank lines."""
    matches = list(_HEADER.finditer(text))
    sections: list[Section] = []
    head = text[: matches[0].start()] if matches else text
    if head.strip():
        sections.append(Section("", "", head.strip("\n")))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        sections.append(
            Section(m.group(1).strip(), (m.group(2) or "").strip(), text[m.end() : end].strip("\n"))
        )
    return sections


def first(sections: list[Section], name: str) -> Section | None:
    """The first section of that name, or None."""
    return next((s for s in sections if s.name == name), None)


def all_named(sections: list[Section], name: str) -> list[Section]:
    return [s for s in sections if s.name == name]
