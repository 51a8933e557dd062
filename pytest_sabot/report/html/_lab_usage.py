"""Model usage of a lab run, shaped for the page and the terminal: what the lab observed
and what an MCP client registered about itself, side by side and never added together.

Each registration is shown as the client sent it, with its checks: "registered,
consistent" or "registered, inconsistent: MU4 ..." (docs/LAB.md, MU1..MU7). Only the record
is read; nothing here re-judges it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pytest_sabot.lab.record import LabRun, ModelUsage, ProviderUsage, UsageEntry

STATUS_WORDS = {
    "none": "nothing registered",
    "consistent": "every registration consistent and counted",
    "partly_inconsistent": "some registrations inconsistent: only the consistent ones count",
    "inconsistent": "inconsistent: nothing counted",
}


@dataclass
class EntryView:
    number: int
    sent: str
    where: str
    verdict: str  # "registered, consistent" or "registered, inconsistent: MU4, MU6"
    failures: list[tuple[str, str]]  # (rule, message)
    counted: bool


@dataclass
class UsageView:
    observed: str  # what the lab observed, in words ('unknown' stays 'unknown')
    observed_source: str
    registered: bool  # an MCP run (the client could register)
    status: str
    status_words: str
    entries: list[EntryView]
    declared_total: str
    total_failures: list[tuple[str, str]]
    counted: list[ModelUsage]


def observed_text(u: ProviderUsage) -> str:
    return (f"{u.model_calls} model calls, {u.prompt_tokens} prompt + "
            f"{u.completion_tokens} completion tokens, cost {u.cost_usd}")


def counted_text(m: ModelUsage) -> str:
    cost = m.cost_usd if m.cost_usd == "unknown" else f"{m.cost_usd:.6g} USD"
    return (f"{m.provider}/{m.model}: {m.calls} calls, {m.input_tokens} input + "
            f"{m.output_tokens} output tokens, cost {cost}")


def verdict(entry: UsageEntry) -> str:
    if not entry.failed:
        return "registered, consistent" + ("" if entry.counted else
                                           " (not counted: the declared total differs)")
    return "registered, inconsistent: " + ", ".join(f.rule for f in entry.failed)


def _entry(e: UsageEntry) -> EntryView:
    return EntryView(
        number=e.number, sent=json.dumps(e.arguments, sort_keys=True, ensure_ascii=False),
        where=(f"after {e.actions_before} action(s), at {e.at_ms} ms"
               + ("" if e.context_read else ", before the context was read")),
        verdict=verdict(e), failures=[(f.rule, f.message) for f in e.failed],
        counted=e.counted)


SCRIPTED = "no model provider (a scripted controller calls none)"


def scripted(record: LabRun) -> bool:
    """A scripted controller's run: it calls no model, so no usage was there to observe."""
    return record.agent.fixture and record.measurement.provider_usage.source == "unobserved"


def build_usage(record: LabRun) -> UsageView:
    u, c = record.measurement.provider_usage, record.client_usage
    observed = SCRIPTED if scripted(record) else observed_text(u)
    if c is None:
        return UsageView(observed=observed, observed_source=u.source, registered=False,
                         status="", status_words="", entries=[], declared_total="",
                         total_failures=[], counted=[])
    return UsageView(
        observed=observed, observed_source=u.source, registered=True, status=c.status,
        status_words=STATUS_WORDS[c.status], entries=[_entry(e) for e in c.entries],
        declared_total=("" if c.declared_total is None
                        else json.dumps(c.declared_total, sort_keys=True)),
        total_failures=[(f.rule, f.message) for f in c.total_failed], counted=list(c.counted))


def usage_lines(record: LabRun) -> list[str]:
    """The same, as lines for ``sabot inspect``."""
    v = build_usage(record)
    lines = [f"usage observed by the lab ({v.observed_source}): {v.observed}"]
    if not v.registered:
        return lines
    lines.append(f"usage registered by the MCP client: {v.status} ({v.status_words})")
    for e in v.entries:
        lines.append(f"  #{e.number} {e.sent} ({e.where}): {e.verdict}")
        lines += [f"      {rule}: {message}" for rule, message in e.failures]
    if v.declared_total:
        lines.append(f"  declared total {v.declared_total}: "
                     + ("; ".join(f"{r} {m}" for r, m in v.total_failures)
                        if v.total_failures else "agrees with the registrations"))
    lines += [f"  counted {counted_text(m)}" for m in v.counted]
    if not v.counted:
        lines.append("  counted: nothing")
    return lines
