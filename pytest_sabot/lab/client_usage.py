"""The consistency checks on model usage an MCP client registers about itself (MU1..MU7).

The lab's MCP server never sees the client's model calls, so what the lab observed stays
'unknown' (``measurement.provider_usage``). A client may say what it used with
``register_usage``; each registration is checked here, kept whatever the outcome, and
counted only when it passes every check (docs/LAB.md, "Usage the client registers").
Pure functions of what the client sent and where in the run it sent it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_sabot.lab.record import ClientUsage, ModelUsage, UsageCheckFailure, UsageEntry

COUNTS = ("calls", "input_tokens", "output_tokens")
ENTRY_FIELDS = ("provider", "model", *COUNTS)
TOTAL_FIELDS = COUNTS
COST = "cost_usd"
NAME_LIMIT = 200

#: Each check's id and what it holds (the table in docs/LAB.md says the same).
CHECKS: dict[str, str] = {
    "MU1": "only the fields provider, model, calls, input_tokens, output_tokens and, "
           "optionally, cost_usd",
    "MU2": "one provider and one model: each a non-empty name without spaces or commas",
    "MU3": "calls and tokens are non-negative integers; cost_usd, when given, a non-negative "
           "finite number",
    "MU4": "tokens are present: at least one call, and at least one input token per call",
    "MU5": "registered after the client read the context",
    "MU6": "no more calls than the client's actions can justify: the calls counted so far, "
           "this entry's included, are at most the client's actions before it plus one",
    "MU7": "the total declared with finish_run equals the sum of the registered entries",
}


def _fail(rule: str, message: str) -> UsageCheckFailure:
    return UsageCheckFailure(rule=rule, message=message)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _cost(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0)


def _fields(arguments: Mapping[str, Any], required: Sequence[str], rule: str,
            what: str) -> list[UsageCheckFailure]:
    missing = [f for f in required if f not in arguments]
    extra = sorted(k for k in arguments if k not in (*required, COST))
    if not missing and not extra:
        return []
    said = []
    if missing:
        said.append("missing " + ", ".join(missing))
    if extra:
        said.append("unknown field(s) " + ", ".join(extra))
    return [_fail(rule, f"{what}: " + "; ".join(said))]


def _numbers(arguments: Mapping[str, Any], rule: str) -> list[UsageCheckFailure]:
    bad = [f"{f}={arguments[f]!r}" for f in COUNTS if f in arguments
           and not _count(arguments[f])]
    if COST in arguments and not _cost(arguments[COST]):
        bad.append(f"{COST}={arguments[COST]!r}")
    return [_fail(rule, "not a non-negative number: " + ", ".join(bad))] if bad else []


def _name(value: Any) -> bool:
    return (isinstance(value, str) and 0 < len(value) <= NAME_LIMIT
            and not any(c.isspace() or c == "," for c in value))


def check_entry(arguments: Mapping[str, Any], *, context_read: bool, actions_before: int,
                calls_before: int) -> list[UsageCheckFailure]:
    """The checks one registration fails (MU1..MU6), in rule order; empty when consistent.

    ``calls_before`` is the sum of the calls of the consistent entries before it.
    """
    failed = _fields(arguments, ENTRY_FIELDS, "MU1", "fields")
    names = [f"{f}={arguments.get(f)!r}" for f in ("provider", "model")
             if f in arguments and not _name(arguments[f])]
    if names:
        failed.append(_fail("MU2", "not one name: " + ", ".join(names)))
    failed += _numbers(arguments, "MU3")
    readable = all(f in arguments and _count(arguments[f]) for f in COUNTS)
    if readable:
        calls, inputs = arguments["calls"], arguments["input_tokens"]
        if calls < 1:
            failed.append(_fail("MU4", "no model call registered (calls=0)"))
        elif inputs < calls:
            failed.append(_fail("MU4", f"{calls} call(s) with {inputs} input token(s): "
                                "every call has at least one"))
    if not context_read:
        failed.append(_fail("MU5", "registered before the client read the context"))
    if readable and calls_before + arguments["calls"] > actions_before + 1:
        failed.append(_fail("MU6", f"{calls_before + arguments['calls']} model calls "
                            f"counted with this entry, but the client had made "
                            f"{actions_before} action(s) before it: at most "
                            f"{actions_before + 1} calls are justified"))
    return failed


def register(entries: Sequence[UsageEntry], arguments: Mapping[str, Any], *,
             context_read: bool, actions_before: int, at_ms: int) -> UsageEntry:
    """The next entry: the registration as sent, where it came and the checks it failed."""
    calls_before = sum(int(e.arguments["calls"]) for e in entries if not e.failed)
    failed = check_entry(arguments, context_read=context_read,
                         actions_before=actions_before, calls_before=calls_before)
    return UsageEntry(number=len(entries) + 1, arguments=dict(arguments),
                      actions_before=actions_before, context_read=context_read, at_ms=at_ms,
                      failed=failed, counted=not failed)


def _readable(entry: UsageEntry) -> bool:
    return all(_count(entry.arguments.get(f)) for f in COUNTS)


def check_total(entries: Sequence[UsageEntry], declared: Any) -> list[UsageCheckFailure]:
    """MU7: the declared total (calls, tokens, optional cost) equals the sum of the entries
    whose counts are readable (the client's own account, consistent or not)."""
    if declared is None:
        return []
    if not isinstance(declared, Mapping):
        return [_fail("MU7", f"declared total: an object was expected, not {declared!r}")]
    failed = _fields(declared, TOTAL_FIELDS, "MU7", "declared total")
    failed += _numbers(declared, "MU7")
    if failed:
        return failed
    summed = [e for e in entries if _readable(e)]
    wrong = [f"{f} {declared[f]} declared, {total} registered" for f in COUNTS
             if declared[f] != (total := sum(int(e.arguments[f]) for e in summed))]
    if COST in declared:
        costs: list[Any] = [e.arguments.get(COST) for e in summed]
        if not all(_cost(c) for c in costs):
            wrong.append(f"{COST} {declared[COST]} declared, but not every entry gave one")
        elif not math.isclose(float(declared[COST]), math.fsum(costs), rel_tol=1e-9,
                              abs_tol=1e-12):
            wrong.append(f"{COST} {declared[COST]} declared, {math.fsum(costs)} registered")
    return [_fail("MU7", "declared total differs: " + "; ".join(wrong))] if wrong else []


def _counted(entries: Sequence[UsageEntry]) -> list[ModelUsage]:
    groups: dict[tuple[str, str], list[UsageEntry]] = {}
    for e in entries:
        if e.counted:
            groups.setdefault((e.arguments["provider"], e.arguments["model"]), []).append(e)
    out = []
    for (provider, model), group in groups.items():
        costs: list[Any] = [e.arguments.get(COST) for e in group]
        out.append(ModelUsage(
            provider=provider, model=model,
            calls=sum(e.arguments["calls"] for e in group),
            input_tokens=sum(e.arguments["input_tokens"] for e in group),
            output_tokens=sum(e.arguments["output_tokens"] for e in group),
            cost_usd=math.fsum(costs) if all(c is not None for c in costs) else "unknown"))
    return out


def settle(entries: Sequence[UsageEntry], declared: Any) -> ClientUsage:
    """The run's client usage: every entry kept, the totals checked, the consistent entries
    counted per provider and model (none when the declared total contradicts them)."""
    total_failed = check_total(entries, declared)
    kept = [e.model_copy(update={"counted": not e.failed and not total_failed})
            for e in entries]
    counted = sum(e.counted for e in kept)
    status = ("inconsistent" if total_failed or (kept and not counted)
              else "none" if not kept
              else "consistent" if counted == len(kept) else "partly_inconsistent")
    shown = (dict(declared) if isinstance(declared, Mapping)
             else None if declared is None else {"value": declared})
    return ClientUsage(status=status, entries=kept, declared_total=shown,
                       total_failed=total_failed, counted=_counted(kept))
