"""Reading hard-tier acts out of a trace with a mapping revision (standard section 5).

The matcher vocabulary is documented in pytest_sabot/core/models/mapping.py and
mappings/README.md. Both the v0.1.3 permissive reading and the v0.2.1 narrow retry-reason
reading are computed for every act:

* permissive (v0.1.1-v0.2.0): every mapped act counts, including Magentic-One stall
  re-plans whatever their recorded reason;
* narrow (v0.2.1): a retry_with_reason act (revise loop, guardrail retry, re-plan) counts
  only when its recorded reason (the row's ``reason_from``) contains at least one
  registered anchor of the cell's (task, operator), matched exactly as FLAGS anchors are
  (case-insensitive substrings, word-boundary where registered). With no anchors for the
  cell, no retry act can reference the anomaly, so none counts. O4 keeps its registered
  anchors here: the v0.2.1 O4 exclusion concerns the FLAGS surface only. Acts other than
  retry_with_reason count in both readings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pytest_sabot.core.models.anchors import Anchor
from pytest_sabot.core.models.mapping import ActRow, MappingRevision, Matcher
from pytest_sabot.core.models.trace import Trace
from pytest_sabot.core.models.verdict import ActRecord
from pytest_sabot.core.verdict_token import parse_verdict
from pytest_sabot.scoring.anchors import references_anchor

_MISSING = object()


def field_value(event: Any, name: str) -> Any:
    """``text`` is the event text; any other name is a payload field (missing -> sentinel)."""
    if name == "text":
        return event.text
    return getattr(event.data, name, _MISSING)


def matches(event: Any, matcher: Matcher) -> bool:
    """Whether one trace event satisfies every clause of a matcher."""
    if event.kind != matcher.event:
        return False
    if matcher.component is not None and event.component not in matcher.component:
        return False
    for name, wanted in matcher.data.items():
        if not _equal(field_value(event, name), wanted):
            return False
    for name, other in matcher.less_than.items():
        low, high = field_value(event, name), field_value(event, other)
        if not _comparable(low) or not _comparable(high) or not low < high:
            return False
    for name, exact in matcher.equals.items():
        value = field_value(event, name)
        if not isinstance(value, str) or value != exact:
            return False
    for name, pattern in matcher.regex.items():
        value = field_value(event, name)
        if not isinstance(value, str) or re.search(pattern, value) is None:
            return False
    if matcher.verdict is not None:
        token = parse_verdict(event.text)
        if token is None or token.verdict != matcher.verdict:
            return False
    return True


def _equal(value: Any, wanted: Any) -> bool:
    """Payload equality where a YAML boolean never equals a number (false != 0)."""
    if value is _MISSING:
        return False
    if isinstance(value, bool) or isinstance(wanted, bool):
        return type(value) is type(wanted) and value == wanted
    return bool(value == wanted)


def _comparable(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def recorded_reason(event: Any, row: ActRow) -> str | None:
    """The act's recorded reason, read from where the row says it lives."""
    if row.reason_from == "text":
        return str(event.text) or None
    if row.reason_from == "verdict_reason":
        token = parse_verdict(event.text)
        return token.reason if token else None
    value = field_value(event, row.reason_from.removeprefix("data."))
    return value if isinstance(value, str) and value else None


def find_acts(
    trace: Trace,
    mapping: MappingRevision,
    config: str,
    injection_seq: int | None,
    anchors: Sequence[Anchor] | None,
) -> list[ActRecord]:
    """Every mapped act of the config's rows in the trace, in seq order (a single event
    matching two rows yields two acts)."""
    rows = mapping.rows_for(config)
    acts: list[ActRecord] = []
    for event in trace.events:
        for row in rows:
            if not matches(event, row.match):
                continue
            reason = recorded_reason(event, row)
            is_retry = row.act == "retry_with_reason"
            refs: bool | None = None
            if is_retry:
                refs = references_anchor(reason or "", anchors) if anchors else None
            acts.append(
                ActRecord(
                    act=row.act,
                    row=row.id,
                    seq=event.seq,
                    component=row.component,
                    event_kind=event.kind,
                    event_component=event.component,
                    mechanism=row.mechanism,
                    evidence=event.text,
                    reason=reason,
                    after_injection=injection_seq is not None and event.seq >= injection_seq,
                    corrective=row.corrective,
                    references_anomaly=refs,
                    counts_permissive=True,
                    counts_narrow=(refs is True) if is_retry else True,
                )
            )
    return acts
