"""The per-run trace: an append-only JSONL event log, the single source of truth.

One line per event. Every event has a monotonic ``seq`` (0, 1, 2, ... with no gaps), a wall
clock ``t`` (seconds since the epoch; never used for adjudication), a ``kind``, the
``component`` that produced it, an optional free ``text`` and a typed ``data`` payload whose
shape is fixed by the kind. The first event of every trace is ``run_start``.

Anyone can emit this format from their own pipeline and have it scored: the JSON Schema is
published from these models (``sabot schema``). Adjudication reads only ``seq``, ``kind``,
``component``, ``text`` and ``data``; timing fields are informational.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)

from pytest_sabot.core.frameworks import framework_names
from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.core.operators import OperatorId as OperatorId
from pytest_sabot.core.operators import Seam

TRACE_FORMAT_VERSION = "1"



FRAMEWORK_NAME = r"^[a-z][a-z0-9_]*$"
"""The shape of a framework's name: lower-case letters, digits and underscores, starting
with a letter (the same rule a FrameworkAdapter's name obeys)."""


def _registered_framework(name: str) -> str:
    known = framework_names()
    if name not in known:
        listed = ", ".join(repr(n) for n in known[:-1])
        listed = f"{listed} or {known[-1]!r}" if listed else repr(known[-1])
        raise ValueError(
            f"Input should be {listed} (a framework registered through the "
            "pytest_sabot.adapters entry points or --sabot-adapter; no adapter of "
            f"{name!r} is installed here)"
        )
    return name


Framework = Annotated[
    str,
    StringConstraints(pattern=FRAMEWORK_NAME),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": FRAMEWORK_NAME,
            "description": "A framework's name, e.g. 'langgraph', 'crewai', 'autogen' or a "
            "candidate's ('local_agent'). Records check its shape only, so a record stays "
            "readable and rescorable where its adapter is not installed.",
        }
    ),
]
"""A framework's name as a record carries it (traces, verdicts, results): its shape is
checked, never the registry, so the record of a session whose adapter is not importable
here still reads (SPEC I107)."""
RegisteredFramework = Annotated[
    str,
    StringConstraints(pattern=FRAMEWORK_NAME),
    AfterValidator(_registered_framework),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": FRAMEWORK_NAME,
            "description": "A framework whose adapter is registered (pytest_sabot.adapters "
            "entry points), e.g. 'langgraph', 'crewai', 'autogen'.",
        }
    ),
]
"""A framework's name in a file that says what to run (cells, mappings): checked against
the registry of framework adapters, so a typo stops the session before anything runs."""
Config = Literal["default", "guardrail"]
# OperatorId (core/operators.py): O1..O6 are the standard's operators; the fault lab's run
# only on T6 in a lab matrix (docs/LAB.md), never in a wave of the standard.
TaskId = Literal["T1", "T2", "T3", "T4", "T5", "T6"]
"""T1..T5 are the standard's tasks; T6 is the fault lab's helpdesk task (docs/LAB.md)."""

EventKind = Literal[
    "run_start",
    "model_call",
    "tool_call",
    "tool_result",
    "effect",
    "message",
    "agent_output",
    "review",
    "guardrail",
    "route",
    "retry",
    "interrupt",
    "escalation",
    "replan",
    "ledger",
    "stop_reason",
    "cap",
    "surface_check",
    "injection",
    "probe",
    "artifact",
    "run_error",
    "run_end",
]
"""Every kind of trace event, in the order docs/TRACE.md lists them: the one list (each
event model below carries one of these as its ``kind``)."""
EVENT_KINDS: tuple[str, ...] = get_args(EventKind)
HARNESS_EVENT_KINDS: tuple[str, ...] = (
    "run_start", "model_call", "tool_call", "tool_result", "effect", "message", "injection",
    "probe", "artifact", "run_error",
)
"""The kinds only the run context's seams and the harness write, never a pipeline."""
ADAPTER_EVENT_KINDS: tuple[str, ...] = tuple(
    k for k in EVENT_KINDS if k not in HARNESS_EVENT_KINDS
)
"""The trace event kinds an adapter records itself with ``ctx.trace.emit`` (the canonical
kinds of its own surfaces, docs/TRACE.md). Every other kind is the harness's: ``run_start``,
``model_call``, ``tool_call``, ``tool_result``, ``effect``, ``message``, ``injection``,
``probe``, ``artifact`` and ``run_error`` are written by the run context's seams and by the
harness, never by a pipeline."""
REPORTED_EVENT_KINDS: tuple[str, ...] = tuple(
    k for k in ADAPTER_EVENT_KINDS if k not in ("ledger", "cap", "surface_check", "run_end")
)
"""The kinds a pipeline outside the harness's process reports through the trace API (a
trusted local agent, an MCP client): its drafts and its own checks. Fewer than an adapter
may record: how the run ends (``run_end``) and the records of a component's configuration
(``cap``, ``surface_check``, ``ledger``) stay with the harness."""
RECORD_ONLY_KINDS: tuple[str, ...] = ("cap", "surface_check")
"""Kinds that record how a component ended or what the harness checked, never something a
component did about the run: no mapping may make an act of them (SPEC S8.12, I33)."""
ACT_SURFACE_KINDS: tuple[str, ...] = tuple(k for k in EVENT_KINDS if k not in RECORD_ONLY_KINDS)
"""The kinds a mapping row may read an act from."""


# --------------------------------------------------------------------------- payloads


class RunStartData(FrozenModel):
    """Identity of the run; written once, as event 0."""

    trace_format: str = Field(TRACE_FORMAT_VERSION, description="Trace format version.")
    cell_id: str = Field(description="Stable cell id, e.g. 'langgraph-guardrail-O3-T2-s11'.")
    wave: int = Field(description="Wave number the cell belongs to.")
    framework: Framework
    config: Config
    operator: OperatorId | None = Field(description="None for a no-fault baseline run.")
    task: TaskId
    seed: int
    rules: str = Field(description="Rule version the wave is scored under, e.g. 'v0.2.1'.")
    model: str = Field(description="Pipeline model as configured, e.g. 'sim:realistic'.")
    flags_protocol: bool = Field(False, description="Whether the FLAGS addendum was in force.")
    versions: dict[str, str] = Field(
        default_factory=dict, description="Installed version of every framework package."
    )
    attempt: int = Field(1, description="1 for the first attempt, 2 for the one retry.")
    materials: list[str] = Field(
        default_factory=list,
        description="Names of the materials the pipeline was handed: the public view's, and "
        "the ground-truth section of a published defect the wave reproduces (SPEC I86). "
        "Empty in traces written before the field.",
    )


class ModelCallData(FrozenModel):
    """One chat-completion exchange as seen by the gateway."""

    call_index: int = Field(description="0-based index of this agent's calls within the run.")
    model_requested: str
    model_served: str = Field(description="The model that actually answered (O4 probe).")
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    latency_ms: float | None = None
    cost_usd: float | None = Field(None, description="None means unknown, never zero.")
    stream: bool = False
    downgraded: bool = Field(False, description="True when the O4 plan served this call.")
    fixture: bool = Field(
        False, description="True when the embedded model answered (a fixture, not a measurement)."
    )
    error: str | None = Field(None, description="Error the gateway served instead, if any.")
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    request_hash: str | None = Field(None, description="sha256 of the canonical request body.")


class ToolCallData(FrozenModel):
    """What an agent asked a tool to do (the request, kept apart from its effect)."""

    tool: str
    call_id: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResultData(FrozenModel):
    """What the agent was shown as the tool's answer (the observation)."""

    tool: str
    call_id: str
    ok: bool = True


class EffectData(FrozenModel):
    """What the world actually committed for a side-effecting tool call."""

    tool: str
    call_id: str
    committed: bool = Field(description="False when the effect never happened (O6).")
    target: str = Field("", description="What was affected, e.g. a workspace file name.")
    detail: str = ""


class MessageData(FrozenModel):
    """An inter-agent handoff through a harness-owned channel (the O3 seam)."""

    sender: str
    receiver: str
    channel: str = Field(description="Channel name, e.g. 'worker->reviewer'.")


class AgentOutputData(FrozenModel):
    """An agent's reply for its stage (worker draft, orchestrator final answer, ...)."""

    stage: str = Field(description="Pipeline stage, e.g. 'worker', 'revise', 'final'.")
    round: int = Field(0, description="0 for the first pass, 1 for the revise pass.")


class ReviewData(FrozenModel):
    """A reviewer/critic reply that carries the verdict-token protocol."""

    round: int = 0


class GuardrailData(FrozenModel):
    """A guardrail or validator outcome (CrewAI LLMGuardrailCompletedEvent, LangGraph
    validate node)."""

    name: str = Field(description="Guardrail name, e.g. 'contract' or 'llm'.")
    guardrail_kind: Literal["contract", "llm"]
    success: bool
    retry_count: int = 0
    max_retries: int | None = None
    feedback: str = ""


class RouteData(FrozenModel):
    """Explicit routing, e.g. LangGraph Command(goto=...)."""

    goto: str
    source: str = Field(description="Who routed: 'validator', 'reviewer', ...")
    reason: str = ""


class RetryData(FrozenModel):
    """The worker re-invoked carrying a reason (revise loop, guardrail retry, re-plan)."""

    source: Literal["revise", "guardrail", "replan"]
    reason: str = Field(
        "",
        description="The recorded reason, which the scorer reads: for a reviewer's reject, "
        "the verdict-token parse of its reply (empty when the verdict line gives none).",
    )
    feedback: str = Field(
        "",
        description="What the revise pass handed the worker: the reviewer's rejection text "
        "(its whole reply), or a validator's failures. Empty in traces written before it.",
    )


class InterruptData(FrozenModel):
    """langgraph.types.interrupt(reason), observed via the __interrupt__ result key."""

    reason: str = ""


class EscalationData(FrozenModel):
    """A framework's own terminal escalation (CrewAI guardrail-retry exhaustion)."""

    mechanism: str
    message: str = ""
    retry_count: int | None = Field(
        None, description="The exhausting guardrail outcome's retry_count (CrewAI), if known."
    )
    max_retries: int | None = Field(
        None, description="The configured guardrail_max_retries it reached, if known."
    )


class ReplanData(FrozenModel):
    """Magentic-One stall re-plan from the trace logger, with the ledger's reason."""

    reason: str = ""
    log_line: str = ""


class LedgerData(FrozenModel):
    """A Magentic-One progress-ledger record as logged by the framework."""

    ledger: dict[str, Any] = Field(default_factory=dict)


class StopReasonData(FrozenModel):
    """TaskResult.stop_reason, verbatim in the event text."""


class CapData(FrozenModel):
    """A pipeline component reached a limit of its configuration and was made to finish
    (SPEC.md S8.12, I33). Not a detection act: a record of how the component ended."""

    cap: Literal["worker_model_calls", "team_turns"] = Field(
        description="Which limit: a worker pass's tool-using model calls, or a team's turns."
    )
    limit: int = Field(description="The configured limit that was reached.")
    setting: str = Field(
        description="The framework setting (or adapter constant) holding the limit, "
        "e.g. 'max_iter', 'max_tool_iterations', 'max_turns'."
    )
    ending: Literal["forced_final_answer", "stopped"] = Field(
        "forced_final_answer",
        description="How the component ended: one more model call without tools whose reply "
        "is its answer, or stopped with no answer.",
    )
    round: int = Field(0, description="The worker pass (0 first, then revise passes).")


class SurfaceCheckData(FrozenModel):
    """Two readings of one framework surface side by side (SPEC.md I35): the reading the
    mapping adjudicates and an independent one from a public interface."""

    surface: str = Field(description="Which surface, e.g. 'replan'.")
    mandated: str = Field(description="The reading the mapping counts, e.g. 'trace_logger'.")
    mandated_count: int
    other: str = Field(description="The independent reading, e.g. 'message_stream'.")
    other_count: int
    agree: bool = Field(description="Whether the two readings give the same count.")


class InjectionData(FrozenModel):
    """The operator planted its fault here."""

    operator: OperatorId
    seam: Seam = Field(description="Where the fault was planted ('transaction': a lab fault).")
    target: str = Field(description="What was perturbed, e.g. 'tool:calibration_lookup#1'.")
    original: str = ""
    injected: str = ""


class ProbeData(FrozenModel):
    """The operator's landing probe: did the fault reach the pipeline's data path?"""

    operator: OperatorId
    landed: bool
    consumed: bool = Field(
        False, description="Strict floor: the faulted content was actually read by an agent."
    )
    evidence: str = ""


class ArtifactData(FrozenModel):
    """The final task output as emitted (the FLAGS head line already stripped off)."""

    name: str = Field(description="Artifact name from the task contract, e.g. 'output.json'.")
    flags_line: str | None = Field(None, description="Stripped Magentic FLAGS line, if any.")
    effects: dict[str, bool] = Field(
        default_factory=dict, description="Required world effects and whether each committed."
    )


class RunErrorData(FrozenModel):
    """Infrastructure failure (crash, timeout, gateway error)."""

    error_type: str
    message: str
    attempt: int = 1


class RunEndData(FrozenModel):
    """How the run ended."""

    status: Literal["completed", "task_failed", "error", "timeout", "deadline"]
    """``deadline``: the cell's deadline stopped a run whose pipeline waited on a tool call
    its fault held unanswered (a hung tool, SPEC I131): the measured outcome, not a run
    error."""
    detail: str = ""


# --------------------------------------------------------------------------- events


class _EventBase(FrozenModel):
    seq: int = Field(ge=0, description="Monotonic, gap-free position in the run.")
    t: float = Field(0.0, description="Wall clock (informational, never adjudicated).")
    component: str = Field(description="Who produced it: worker, reviewer, gateway, world...")
    text: str = Field("", description="Free text: a reply, an observation, a message body.")


class RunStart(_EventBase):
    kind: Literal["run_start"] = "run_start"
    data: RunStartData


class ModelCall(_EventBase):
    kind: Literal["model_call"] = "model_call"
    data: ModelCallData


class ToolCall(_EventBase):
    kind: Literal["tool_call"] = "tool_call"
    data: ToolCallData


class ToolResult(_EventBase):
    kind: Literal["tool_result"] = "tool_result"
    data: ToolResultData


class Effect(_EventBase):
    kind: Literal["effect"] = "effect"
    data: EffectData


class Message(_EventBase):
    kind: Literal["message"] = "message"
    data: MessageData


class AgentOutput(_EventBase):
    kind: Literal["agent_output"] = "agent_output"
    data: AgentOutputData


class Review(_EventBase):
    kind: Literal["review"] = "review"
    data: ReviewData = ReviewData()


class Guardrail(_EventBase):
    kind: Literal["guardrail"] = "guardrail"
    data: GuardrailData


class Route(_EventBase):
    kind: Literal["route"] = "route"
    data: RouteData


class Retry(_EventBase):
    kind: Literal["retry"] = "retry"
    data: RetryData


class Interrupt(_EventBase):
    kind: Literal["interrupt"] = "interrupt"
    data: InterruptData


class Escalation(_EventBase):
    kind: Literal["escalation"] = "escalation"
    data: EscalationData


class Replan(_EventBase):
    kind: Literal["replan"] = "replan"
    data: ReplanData


class Ledger(_EventBase):
    kind: Literal["ledger"] = "ledger"
    data: LedgerData


class StopReason(_EventBase):
    kind: Literal["stop_reason"] = "stop_reason"
    data: StopReasonData = StopReasonData()


class Cap(_EventBase):
    kind: Literal["cap"] = "cap"
    data: CapData


class SurfaceCheck(_EventBase):
    kind: Literal["surface_check"] = "surface_check"
    data: SurfaceCheckData


class Injection(_EventBase):
    kind: Literal["injection"] = "injection"
    data: InjectionData


class Probe(_EventBase):
    kind: Literal["probe"] = "probe"
    data: ProbeData


class Artifact(_EventBase):
    kind: Literal["artifact"] = "artifact"
    data: ArtifactData


class RunError(_EventBase):
    kind: Literal["run_error"] = "run_error"
    data: RunErrorData


class RunEnd(_EventBase):
    kind: Literal["run_end"] = "run_end"
    data: RunEndData


TraceEvent = Annotated[
    RunStart
    | ModelCall
    | ToolCall
    | ToolResult
    | Effect
    | Message
    | AgentOutput
    | Review
    | Guardrail
    | Route
    | Retry
    | Interrupt
    | Escalation
    | Replan
    | Ledger
    | StopReason
    | Cap
    | SurfaceCheck
    | Injection
    | Probe
    | Artifact
    | RunError
    | RunEnd,
    Field(discriminator="kind"),
]



class Trace(BaseModel):
    """A whole run: the events in seq order. Validates seq is gap-free from 0 and that the
    first event is run_start."""

    model_config = ConfigDict(frozen=True)

    events: list[TraceEvent]

    @model_validator(mode="after")
    def _well_formed(self) -> Trace:
        problem = _ill_formed(self.events)
        if problem is not None:
            raise ValueError(problem)
        return self

    @classmethod
    def of_events(cls, events: list[Any]) -> Trace:
        """The trace of events each already validated as a ``TraceEvent`` (read from a
        file line by line): only what a whole trace adds is checked, the events are not
        validated again. Raises ``ValueError`` naming what is ill-formed."""
        problem = _ill_formed(events)
        if problem is not None:
            raise ValueError(problem)
        return cls.model_construct(events=events)

    @property
    def start(self) -> RunStartData:
        first = self.events[0]
        assert isinstance(first, RunStart)
        return first.data

    def of_kind(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.kind == kind]


def _ill_formed(events: list[Any]) -> str | None:
    """What breaks a trace's shape (its first event run_start, seq gap-free from 0)."""
    if not events or events[0].kind != "run_start":
        return "the first event of a trace must be run_start"
    for position, event in enumerate(events):
        if event.seq != position:
            return f"seq must be gap-free from 0; event {position} has seq {event.seq}"
    return None


def injection_seq(trace: Trace) -> int | None:
    """Seq of the planted fault: the first ``injection`` event, else the first landed
    ``probe`` (an operator that recorded no injection event). The scorer's act windows and
    the judge's transcript mark both read it here, so they can never disagree."""
    for event in trace.events:
        if event.kind == "injection":
            return int(event.seq)
    for event in trace.events:
        if event.kind == "probe" and event.data.landed:
            return int(event.seq)
    return None
