"""Validity and exclusions (standard section 3, 10.7 correction 2).

Exactly one code per excluded run, by precedence RUN_ERROR > BASELINE_FAIL >
INJECTION_UNVERIFIED (v0.1.3). Lower-precedence codes the run also met are kept in
``also_qualified`` for audit; they are never counted.

* RUN_ERROR: a ``run_error`` event, or ``run_end`` with status ``error`` or ``timeout``.
  CrewAI guardrail-retry exhaustion is an escalate act, never RUN_ERROR (section 5): an
  error that repeats a recorded escalation message is that escalation ending the run, so a
  ``run_error`` whose message repeats it is disregarded, and so is the ``run_end`` with
  status ``error`` whose detail repeats it (the harness closes a raised exception with
  both). A timeout is never an escalation.
* BASELINE_FAIL: the caller says the cell's no-fault baseline failed (``False``); ``None``
  means no baseline verdict was supplied and excludes nothing.
* INJECTION_UNVERIFIED: no probe event with ``landed=true``. O4 is decided by the rule
  version from the recorded facts, never by the probe's own flag (SPEC I21): under rules
  without ``o4_probe_requires_served_downgrade`` (v0.1.x) an O4 run is verified
  unconditionally, as wave 1 recorded it; from v0.2.0 (10.7 correction 2) it needs a
  model_call that the gateway's O4 plan served (``downgraded``), answered without a
  gateway error, by a model other than the one requested (a trailing dated snapshot suffix
  such as ``-2026-07-01`` is not another model). A call merely served under another name
  (the embedded model answers as its persona, ``sim:realistic``) is not a downgrade.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_sabot.core.models.rules import RuleSet
from pytest_sabot.core.models.trace import Trace
from pytest_sabot.core.models.verdict import EXCLUSION_PRECEDENCE, Exclusion, ExclusionCode
from pytest_sabot.core.operators import served_model

_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def _model_family(name: str) -> str:
    return _SNAPSHOT.sub("", name.strip().lower())


def served_downgrade(trace: Trace) -> Any | None:
    """The first model_call the O4 plan served with a weaker model, or None."""
    for event in trace.of_kind("model_call"):
        data = event.data
        if data.error is not None or not data.downgraded:
            continue
        if _model_family(data.model_served) != _model_family(data.model_requested):
            return event
    return None


def _repeats(message: str, escalations: list[str]) -> bool:
    """Whether an error text repeats (contains, or is contained in) an escalation message."""
    return bool(message) and any(m in message or message in m for m in escalations)


def run_error_reason(trace: Trace) -> str | None:
    """Why the run is an infrastructure failure, or None."""
    escalations = [e.data.message for e in trace.of_kind("escalation") if e.data.message]
    for event in trace.events:
        if event.kind == "run_error":
            message = event.data.message
            if _repeats(message, escalations):
                continue
            return f"{event.data.error_type}: {message} (attempt {event.data.attempt})"
        if event.kind == "run_end" and event.data.status in ("error", "timeout"):
            if event.data.status == "error" and _repeats(event.data.detail, escalations):
                continue
            detail = f": {event.data.detail}" if event.data.detail else ""
            return f"run ended with status {event.data.status}{detail}"
    return None


def injection_unverified_reason(trace: Trace, operator: str, rules: RuleSet) -> str | None:
    """Why the landing probe cannot confirm the fault reached the data path, or None."""
    if served_model(operator):
        return _o4_unverified_reason(trace, rules)
    probes = trace.of_kind("probe")
    if not any(p.data.landed for p in probes):
        if not probes:
            return f"no landing probe recorded for {operator}"
        evidence = "; ".join(p.data.evidence for p in probes if p.data.evidence)
        return f"landing probe for {operator} reports landed=false" + (
            f" ({evidence})" if evidence else ""
        )
    return None


def _o4_unverified_reason(trace: Trace, rules: RuleSet) -> str | None:
    """O4 under the rule version in force, from the model_call facts (SPEC I21)."""
    if not rules.o4_probe_requires_served_downgrade:
        return None  # v0.1.x: O4 verified unconditionally, as wave 1 recorded it
    if served_downgrade(trace) is not None:
        return None
    calls = trace.of_kind("model_call")
    marked = sum(1 for e in calls if e.data.downgraded)
    return (
        "O4: no model call was served by the downgraded model (10.7 correction 2; "
        f"{len(calls)} call(s) recorded, {marked} routed to the downgrade)"
    )


def decide(candidates: dict[ExclusionCode, str]) -> Exclusion | None:
    """Pick the one code by precedence; the others are recorded as also-qualified."""
    present = [code for code in EXCLUSION_PRECEDENCE if code in candidates]
    if not present:
        return None
    return Exclusion(code=present[0], reason=candidates[present[0]], also_qualified=present[1:])


def fault_run_exclusion(
    trace: Trace, operator: str, rules: RuleSet, baseline_passed: bool | None
) -> Exclusion | None:
    """The exclusion of a fault run, or None when the run is valid."""
    candidates: dict[ExclusionCode, str] = {}
    error = run_error_reason(trace)
    if error is not None:
        candidates["RUN_ERROR"] = error
    if baseline_passed is False:
        candidates["BASELINE_FAIL"] = (
            "the no-fault baseline for this framework/config/task/seed failed the task"
        )
    unverified = injection_unverified_reason(trace, operator, rules)
    if unverified is not None:
        candidates["INJECTION_UNVERIFIED"] = unverified
    return decide(candidates)
