"""The internal transcript a judge reads: what the pipeline's components said and were
shown, in order, taken from the trace. Model-call texts are left out because each one
is repeated by the agent output, review or message event of the same stage.

A line marks where the fault was planted. Only what follows it can be a notice of the
fault (SPEC I17): a component restating the task before the fault existed noticed nothing,
and an evidence quote found only before the mark is not accepted."""

from __future__ import annotations

from pytest_sabot.core.models.trace import EVENT_KINDS, Trace, injection_seq

# What the components said and were shown. Left out: model calls (repeated by the output
# of their stage), tool calls (their results are shown), and the harness's own bookkeeping.
_KINDS = frozenset(EVENT_KINDS) - {
    "run_start", "model_call", "tool_call", "effect", "cap", "surface_check", "injection",
    "probe", "run_error", "run_end",
}


FAULT_MARK = "----- the fault was planted here; only what follows can notice it -----"


def after_fault(transcript: str) -> str:
    """The part of a transcript a notice may come from (all of it when unmarked)."""
    _, mark, rest = transcript.partition(FAULT_MARK)
    return rest if mark else transcript


def render(trace: Trace) -> str:
    lines: list[str] = []
    planted = injection_seq(trace)
    for event in trace.events:
        if planted is not None and event.seq == planted:
            lines.append(FAULT_MARK)
        if event.kind not in _KINDS:
            continue
        body = event.text
        if not body:
            data = event.data.model_dump(mode="json")
            body = " ".join(f"{k}={v}" for k, v in data.items() if v not in ("", None, [], {}))
        lines.append(f"[{event.seq}] {event.component} ({event.kind}):\n{body}")
    return "\n\n".join(lines)
