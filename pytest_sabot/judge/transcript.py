"""The internal transcript a judge reads: what the pipeline's components said and were
shown, in order, taken from the trace. Model-call texts are left out because each one
is repeated by the agent output, review or message event of the same stage."""

from __future__ import annotations

from pytest_sabot.models.trace import Trace

_KINDS = (
    "agent_output",
    "review",
    "message",
    "tool_result",
    "guardrail",
    "route",
    "retry",
    "interrupt",
    "escalation",
    "replan",
    "ledger",
    "stop_reason",
    "artifact",
)


def render(trace: Trace) -> str:
    lines: list[str] = []
    for event in trace.events:
        if event.kind not in _KINDS:
            continue
        body = event.text
        if not body:
            data = event.data.model_dump(mode="json")
            body = " ".join(f"{k}={v}" for k, v in data.items() if v not in ("", None, [], {}))
        lines.append(f"[{event.seq}] {event.component} ({event.kind}):\n{body}")
    return "\n\n".join(lines)
