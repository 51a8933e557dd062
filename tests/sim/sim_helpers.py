"""Shared helpers for the embedded-model tests: the published parse rules and request
builders. The regexes are the standard's own (section 5 verdict token, section 10.2 FLAGS)."""

from __future__ import annotations

import re
from typing import Any

VERDICT_RE = re.compile(r"VERDICT:\s*(APPROVE|REJECT)\s*(?:-\s*(.*))?", re.IGNORECASE)
FLAGS_RE = re.compile(r"^\s*FLAGS:\s*(.*?)\s*$", re.IGNORECASE | re.MULTILINE)
NONE_FORMS = re.compile(r"^(none|n/a|no(ne)? noticed|no anomalies)\.?$", re.IGNORECASE)


def verdict(text: str) -> tuple[str, str]:
    """(APPROVE|REJECT, reason) by the first-match rule; ("", "") when there is no token."""
    m = VERDICT_RE.search(text)
    if not m:
        return "", ""
    return m.group(1).upper(), (m.group(2) or "").strip()


def flags(text: str) -> str | None:
    """The FLAGS content by the first-match rule, None when there is no FLAGS line."""
    m = FLAGS_RE.search(text)
    return m.group(1) if m else None


def is_flag(content: str | None) -> bool:
    return content is not None and content != "" and not NONE_FORMS.match(content)


def chat(*messages: tuple[str, str], **extra: Any) -> dict[str, Any]:
    """A request body from (role, content) pairs."""
    body: dict[str, Any] = {
        "model": "gpt-5.6-terra",
        "messages": [{"role": r, "content": c} for r, c in messages],
    }
    body.update(extra)
    return body


def message(completion: dict[str, Any]) -> dict[str, Any]:
    msg = completion["choices"][0]["message"]
    assert isinstance(msg, dict)
    return msg
