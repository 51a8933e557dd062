"""The commands README.md and docs/*.md tell a reader to type, read from their ``bash``
blocks: one entry per command (a line, with its ``\\`` continuations joined and its
trailing ``# comment`` cut off), in the order the page gives them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")))
_BLOCK = re.compile(r"^```(?:bash|sh|shell)\n(.*?)^```", re.S | re.M)
_COMMENT = re.compile(r"\s{2,}#\s.*$|\s{2,}#$")


@dataclass(frozen=True)
class Documented:
    page: str
    command: str


def commands_of(page: str) -> list[str]:
    """The commands of one page, in order."""
    text = (ROOT / page).read_text(encoding="utf-8")
    found: list[str] = []
    for block in _BLOCK.finditer(text):
        pending = ""
        for raw in block.group(1).splitlines():
            line = _COMMENT.sub("", raw).rstrip()
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.endswith("\\"):
                pending += line[:-1].rstrip() + " "
                continue
            found.append((pending + line.strip()).strip())
            pending = ""
    return found


def documented() -> list[Documented]:
    return [Documented(page, c) for page in PAGES for c in commands_of(page)]
