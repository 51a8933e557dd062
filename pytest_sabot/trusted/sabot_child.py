"""In the child: what a trusted local agent run as a Sabot pipeline receives.

``pytest --sabot-wave=3 --sabot-agent mypkg.agent:run --trust-local-agent`` imports
``mypkg.agent`` in a supervised child process (:mod:`pytest_sabot.trusted.supervisor`) and
calls ``run(context)`` with the :class:`AgentContext` built here from the ``start``
message alone. Everything the agent does to the run travels to the parent as a request:

* ``call_tool``: one of the task's tools; the parent runs it through the same seams a
  framework's tool call goes through, and answers with the observation text;
* ``worker_prompt`` / ``reviewer_prompt``: the messages of a pass, as every shipped
  pipeline gets them (the reviewer's carry the delivered draft, the tool log and the
  verdict protocol);
* ``handoff``: a text sent from one of the agent's components to another, through the
  harness's channel; the answer is what arrived;
* ``checks.report``: one event of the agent's own surfaces (a review, a retry, an
  escalation...), one of the kinds in ``REPORTED_EVENT_KINDS``.

The harness's requests travel as tool calls whose names begin with ``sabot:``, a prefix no
model-facing tool name can carry. Model calls go straight to the endpoints of
:meth:`AgentContext.model` (OpenAI-compatible, a credential that opens this run's model calls
and nothing else, never a provider key; in the sandbox served on the child's own loopback
and carried over the pipe, :mod:`pytest_sabot.trusted.proxy`).
Nothing of the fault schedule, the task's private spec, the scenario files or the scoring
rules reaches this process: no message carries them.
"""

from __future__ import annotations

from typing import Any

from pytest_sabot.core.context import Messages
from pytest_sabot.gateway.secrets import redact_in_logs
from pytest_sabot.trusted.channel import ChildChannel, Refusal
from pytest_sabot.trusted.context import Bound, output_text
from pytest_sabot.trusted.protocol import ModelEndpoint, Start, ToolSpec
from pytest_sabot.trusted.proxy import PipeProxy

HARNESS_PREFIX = "sabot:"
WORKER_PROMPT = "sabot:worker_prompt"
REVIEWER_PROMPT = "sabot:reviewer_prompt"
HANDOFF = "sabot:handoff"
REPORT = "sabot:report"


def _messages(answer: Any) -> Messages:
    if not isinstance(answer, dict):
        raise Refusal("harness_failure", f"expected messages, got {answer!r}")
    return Messages(system=str(answer.get("system", "")), user=str(answer.get("user", "")))


class OwnChecks:
    """The agent's own checks, reported into the run's trace (``context.checks``).

    Only what the agent reports here, through its handoffs and its tool calls, is the
    evidence its row is scored on (the mapping file ``pytest_sabot/trusted/local_agent.yaml``
    says which reports are detection acts)."""

    def __init__(self, channel: ChildChannel) -> None:
        self._channel = channel

    def report(self, kind: str, component: str, text: str = "", **data: Any) -> int:
        """Record one event of ``kind`` (one of ``REPORTED_EVENT_KINDS``) by ``component``;
        returns its sequence number. A kind or payload the trace refuses raises Refusal."""
        answer = self._channel.call_tool(
            REPORT, {"kind": kind, "component": component, "text": text, "data": data}
        )
        return int(answer["seq"]) if isinstance(answer, dict) else -1

    def review(self, text: str, component: str = "reviewer", round: int = 0) -> int:
        """A reviewer's reply to pass ``round``; the harness reads its verdict line
        (VERDICT: ACCEPT or VERDICT: REJECT - reason) with the verdict-token protocol."""
        return self.report("review", component, text, round=round)

    def retry(self, reason: str, component: str = "worker", source: str = "revise") -> int:
        """A pass started again because of ``reason`` (e.g. the reviewer's rejection)."""
        return self.report("retry", component, reason, source=source, reason=reason)

    def escalate(self, reason: str, component: str = "reviewer",
                 mechanism: str = "escalate") -> int:
        """The run handed to a human (or stopped) because of ``reason``."""
        return self.report("escalation", component, reason, mechanism=mechanism,
                           message=reason)


class AgentContext:
    """What ``run(context)`` receives: the public task, its capabilities, the tool catalog,
    one model endpoint per agent, and the requests that reach the run."""

    def __init__(self, start: Start, channel: ChildChannel) -> None:
        view = dict(start.view)
        task = view.get("task") or {}
        self._task = Messages(system=str(task.get("system", "")), user=str(task.get("user", "")))
        self._capabilities = dict(view.get("capabilities") or {})
        self._config = str(view.get("config", "default"))
        self._tools = tuple(start.tools)
        self._models = {m.agent: m for m in start.models}
        self._channel = channel
        self.checks = OwnChecks(channel)

    @property
    def task(self) -> Messages:
        """The worker's first messages: the task's public view (materials, brief, contract)."""
        return self._task

    @property
    def capabilities(self) -> dict[str, Any]:
        """What this run offers: its agents, the report kinds, the tool-round cap, whether
        the FLAGS protocol is on."""
        return dict(self._capabilities)

    @property
    def config(self) -> str:
        """The row's configuration (always 'default' for a trusted agent)."""
        return self._config

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The task's tools: name, description, JSON Schema of the arguments and, in
        ``annotations['role']``, whether it is a data, check or write tool."""
        return self._tools

    def model(self, agent: str) -> ModelEndpoint:
        """The model endpoint of one agent ('worker' or 'reviewer')."""
        return self._models[agent]

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """Call one of the task's tools; the observation text. Refusal when the parent
        refuses (the deadline passed, an unknown tool, arguments that are not JSON)."""
        if name.startswith(HARNESS_PREFIX):
            raise Refusal("invalid", f"{name!r} is not one of the task's tools")
        return str(self._channel.call_tool(name, dict(arguments or {})))

    def worker_prompt(self, round: int, feedback: str = "") -> Messages:
        """The worker's messages for pass ``round`` (round 1 carries the feedback)."""
        return _messages(self._channel.call_tool(
            WORKER_PROMPT, {"round": round, "feedback": feedback}))

    def reviewer_prompt(self, delivered: str, round: int) -> Messages:
        """The reviewer's messages for a delivered draft (verdict protocol included)."""
        return _messages(self._channel.call_tool(
            REVIEWER_PROMPT, {"delivered": delivered, "round": round}))

    def handoff(self, sender: str, receiver: str, text: str) -> str:
        """Send ``text`` from one component to another; returns what arrived."""
        return str(self._channel.call_tool(
            HANDOFF, {"sender": sender, "receiver": receiver, "text": text}))


def binding(start: Start, channel: ChildChannel) -> Bound:
    """The child-side binding of a Sabot run: the callable's return value (a string, or
    an object with an ``output`` string) is the run's final artifact. The agents'
    credentials are kept out of every log record this process makes."""
    for endpoint in start.models:
        redact_in_logs(endpoint.api_key)
    if any(endpoint.via_pipe for endpoint in start.models):
        proxy = PipeProxy(channel)  # a sandbox: the pipe is the only door
        start = start.model_copy(update={"models": [
            e.model_copy(update={"base_url": proxy.url}) if e.via_pipe else e
            for e in start.models]})
    return Bound(AgentContext(start, channel), output_text)
