"""Anchor matching against FLAGS line content (standard 10.3-10.4, v0.2.1 pins e and f)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pytest_sabot.core.models.anchors import Anchor

# A match glued to a neighbouring token is not a word-boundary match: see models/anchors.py.
_BEFORE = r"(?<![A-Za-z0-9_])(?<!\d[.,])"
_AFTER = r"(?![A-Za-z0-9_])(?![.,]\d)"


def anchor_pattern(anchor: Anchor) -> re.Pattern[str]:
    """The compiled, case-insensitive pattern an anchor stands for."""
    body = re.escape(anchor.text)
    if anchor.word_boundary:
        body = _BEFORE + body + _AFTER
    return re.compile(body, re.IGNORECASE)


def anchor_hits(content: str, anchors: Sequence[Anchor]) -> list[str]:
    """The registered anchor texts found in ``content``, in registry order."""
    return [a.text for a in anchors if anchor_pattern(a).search(content)]


def references_anchor(content: str, anchors: Sequence[Anchor] | None) -> bool:
    """Whether ``content`` contains at least one anchor (False when there are none)."""
    return bool(anchors) and bool(anchor_hits(content, anchors or ()))
