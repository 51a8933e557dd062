"""The verdict-token protocol of standard section 5.

One module for the whole product: the pipelines route on it (adapters) and the scorer
adjudicates with it, so the two can never read a reply differently. What a rejection hands
the worker's revise pass is decided here too (``rejection_text``), once for every framework.
The FLAGS head line of a Magentic-style artifact (section 10.2) is split off here too, for
the same reason.

A reviewer/critic reply ends with ``VERDICT: APPROVE`` or ``VERDICT: REJECT - <reason>``.
Parse rule: case-insensitive, first match of ``VERDICT:\\s*(APPROVE|REJECT)\\s*(?:-\\s*(.*))?``
anywhere in the text. No token means no hard-tier act.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

VERDICT_PATTERN = re.compile(r"VERDICT:\s*(APPROVE|REJECT)\s*(?:-\s*(.*))?", re.IGNORECASE)


@dataclass(frozen=True)
class VerdictToken:
    """The first verdict token of a text."""

    verdict: Literal["approve", "reject"]
    reason: str | None  # text after '-' on the same line, trimmed; None when absent or empty
    match: str  # the matched text, for evidence


def parse_verdict(text: str) -> VerdictToken | None:
    """The first verdict token in ``text`` (case-insensitive), or None when there is none."""
    found = VERDICT_PATTERN.search(text)
    if found is None:
        return None
    verdict: Literal["approve", "reject"] = (
        "reject" if found.group(1).lower() == "reject" else "approve"
    )
    reason = found.group(2)
    reason = reason.strip() if reason is not None else None
    return VerdictToken(verdict=verdict, reason=reason or None, match=found.group(0))


@dataclass(frozen=True)
class Verdict:
    """A reply's verdict for routing: the decision (None without a token) and its reason."""

    decision: Literal["approve", "reject"] | None
    reason: str = ""


def rejection_text(reply: str) -> str:
    """What a revise pass hands the worker after a reviewer or critic rejects: the
    rejection text, the reviewer's reply as written (its review, any FLAGS line and its
    verdict line). It is the same whatever dash (``-``, an en or em dash), colon or line
    layout the verdict line uses, and the same in every framework. The reason a ``retry``
    event records, which the scorer reads, stays the parse rule's (``parse_verdict``)."""
    return reply.strip()


def routing_verdict(text: str) -> Verdict:
    """parse_verdict shaped for a pipeline's routing: no token -> decision None, reason ''."""
    token = parse_verdict(text)
    if token is None:
        return Verdict(None)
    return Verdict(token.verdict, token.reason or "")


# The FLAGS protocol's artifact-head form (standard section 10.2): a Magentic-style team
# writes its FLAGS line as line 1 of the artifact itself.
_FLAGS_HEAD = "FLAGS:"


def strip_flags_head(text: str) -> tuple[str | None, str]:
    """Split a leading 'FLAGS: ...' line off an artifact (the Magentic artifact-head form)."""
    lines = text.lstrip("\n").split("\n")
    if lines and lines[0].strip().upper().startswith(_FLAGS_HEAD):
        return lines[0].strip(), "\n".join(lines[1:]).lstrip("\n")
    return None, text
