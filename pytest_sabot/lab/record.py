"""The run record (``run.json``): everything one lab run did, and its gate.

The record holds the scenario it ran (so it can be re-evaluated and replayed with
nothing else), what the agent was given, the world before and after, the four evidence
streams and the agent's waits, the fault coverage, how execution ended, the measurements
and the gate. Streams carry virtual time only; wall-clock figures live in ``timings``.
The JSON Schema is published as ``schemas/lab-run.schema.json``.

A record is written atomically (temp file, fsync, rename). An existing ``run.json`` in
the same directory is set aside as ``run.prev-N.json``, never overwritten.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from pytest_sabot.core.errors import SabotDataError, from_validation_error
from pytest_sabot.core.loading import parse_json
from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.core.trace_io import write_json_atomic
from pytest_sabot.lab.agent import AgentKind, AgentView
from pytest_sabot.lab.evidence import EvidenceRef, Streams, WaitEvent
from pytest_sabot.lab.faults.base import EntryAccount, FaultCoverage
from pytest_sabot.lab.scenario import Scenario
from pytest_sabot.lab.vocabulary import RUN_FILE, ExecutionStatus, GateOutcome
from pytest_sabot.lab.world.entities import WorldState
from pytest_sabot.trusted.report import ProcessReport

RUN_FORMAT_VERSION: Literal[1] = 1
Unknown = Literal["unknown"]

# Figures of a run that a record and a comparison of records both state.
ScenarioDigest = Annotated[str, Field(description="sha256 of the scenario's canonical JSON.")]
RoutedCalls = Annotated[int, Field(description="Tool requests routed through the boundary.")]
Deliveries = Annotated[int, Field(description="Deliveries that reached the world.")]
Effects = Annotated[int, Field(description="Committed effects (agent and approver).")]
VirtualMs = Annotated[int, Field(description="Virtual time at the end of the run.")]
Outcome = Annotated[GateOutcome, Field(description="pass, fail, error or inconclusive.")]
ExitCode = Annotated[int, Field(description="0 pass, 1 fail, 2 error, 3 inconclusive.")]


class AgentInfo(FrozenModel):
    """Which agent ran."""

    name: str = Field(description="Agent name, e.g. 'builtin:naive'.")
    kind: AgentKind = Field(
        description="'scripted' (a built-in controller), 'python' (a callable, in-process or "
        "a trusted local agent), 'framework', or 'mcp' (a client of the lab's MCP server)."
    )
    fixture: bool = Field(
        description="True for acceptance fixtures: never a measurement of any model."
    )


class RefusedAction(FrozenModel):
    """The action refused when the deadline or budget was reached (replay repeats it)."""

    kind: Literal["request", "wait"] = Field(description="A tool request or a wait.")
    tool: str | None = Field(None, description="The tool, for a request.")
    arguments: dict[str, Any] | None = Field(None, description="Its arguments, if readable.")
    ms: int | None = Field(None, description="The wait asked for, for a wait.")


class Execution(FrozenModel):
    """How the agent loop ended. 'completed' says nothing about the task's success."""

    status: ExecutionStatus = Field(description="How the run ended.")
    detail: str = Field("", description="Error text, or which limit was reached.")
    output: str = Field("", description="The agent's own final account (never judged).")
    refused: RefusedAction | None = Field(
        None, description="The action refused at the limit, if one was."
    )


class ProviderUsage(FrozenModel):
    """Model-provider usage, as observed; what was not observed stays 'unknown'."""

    source: Literal["unobserved", "gateway"] = Field(
        "unobserved", description="Where the figures come from."
    )
    model_calls: int | Unknown = Field("unknown", description="Model calls.")
    prompt_tokens: int | Unknown = Field("unknown", description="Prompt tokens.")
    completion_tokens: int | Unknown = Field("unknown", description="Completion tokens.")
    cost_usd: float | Unknown = Field("unknown", description="Cost in US dollars.")


class UsageCheckFailure(FrozenModel):
    """One consistency check a client's usage registration failed (docs/LAB.md, MU1..MU7)."""

    rule: str = Field(description="Check id, e.g. 'MU4' (see docs/LAB.md).")
    message: str = Field(description="What is inconsistent, in words.")


class UsageEntry(FrozenModel):
    """One ``register_usage`` call of an MCP client, kept as it was sent, with where in the
    run it came and the checks it failed. Only a consistent entry is ever counted."""

    number: int = Field(description="1 for the first registration of the run, and so on.")
    arguments: dict[str, Any] = Field(description="The arguments exactly as the client sent "
                                      "them (provider, model, calls, tokens, cost).")
    actions_before: int = Field(
        description="The client's actions before it: tool calls (requests, waits, context "
        "reads; not register_usage) and resource reads of the context.")
    context_read: bool = Field(description="Whether the client had read the context by then.")
    at_ms: int = Field(description="The run's virtual time when it was registered.")
    failed: list[UsageCheckFailure] = Field(
        default_factory=list, description="The checks it failed; empty when consistent.")
    counted: bool = Field(description="Whether it counts in 'counted' (consistent, and the "
                          "client's declared total agrees with its entries).")


class ModelUsage(FrozenModel):
    """Usage of one provider and model, summed over the consistent entries that name it."""

    provider: str = Field(description="The provider, as registered.")
    model: str = Field(description="The model, as registered.")
    calls: int = Field(description="Model calls.")
    input_tokens: int = Field(description="Input (prompt) tokens.")
    output_tokens: int = Field(description="Output (completion) tokens.")
    cost_usd: float | Unknown = Field(
        "unknown", description="Cost in US dollars; 'unknown' unless every entry gave one.")


class ClientUsage(FrozenModel):
    """Model usage an MCP client registered about itself: a claim, never an observation.

    Kept apart from ``measurement.provider_usage`` (what the lab observed: 'unknown' for an
    MCP run) and never merged with it. Entries that fail a check are kept and never counted.
    """

    source: Literal["mcp_client"] = Field(
        "mcp_client", description="Registered by the MCP client through register_usage.")
    status: Literal["none", "consistent", "partly_inconsistent", "inconsistent"] = Field(
        description="'none' (nothing registered), 'consistent' (every entry counted), "
        "'partly_inconsistent' (some entries counted), 'inconsistent' (none counted).")
    entries: list[UsageEntry] = Field(default_factory=list,
                                      description="Every registration, in order.")
    declared_total: dict[str, Any] | None = Field(
        None, description="The totals the client declared with finish_run, as sent, if any.")
    total_failed: list[UsageCheckFailure] = Field(
        default_factory=list, description="The totals check (MU7) when it failed: then no "
        "entry is counted.")
    counted: list[ModelUsage] = Field(
        default_factory=list, description="Per provider and model, the consistent entries "
        "summed; models are never summed together.")


class Measurement(FrozenModel):
    """What the harness counted."""

    routed_calls: RoutedCalls
    deliveries: Deliveries
    effects: Effects
    waits: int = Field(description="Virtual waits the agent asked for.")
    virtual_ms: VirtualMs
    provider_usage: ProviderUsage = Field(
        default_factory=ProviderUsage, description="Model usage, 'unknown' unless observed."
    )


class Timings(FrozenModel):
    """Wall-clock figures (never compared by replay, never used by the gate)."""

    started_at: str = Field(description="ISO 8601 UTC time the run started.")
    real_ms: float = Field(description="Real duration of the whole run, milliseconds.")
    agent_real_ms: float = Field(description="Real duration of the agent loop, milliseconds.")


class Violation(FrozenModel):
    """One broken completion or safety rule, with the events that broke it."""

    rule: str = Field(description="Rule id, e.g. 'LS1' (see docs/LAB.md).")
    kind: Literal["completion", "safety"] = Field(description="Which family it belongs to.")
    message: str = Field(description="What is wrong, in words.")
    evidence: list[EvidenceRef] = Field(
        default_factory=list, description="The events that caused it, in history order."
    )


class CoverageCheck(EntryAccount):
    """One schedule entry as the gate sees it."""

    required: bool = Field(description="Whether the gate needs it.")
    status: str = Field(description="planned, matched, activated or suppressed.")
    landed: bool = Field(description="The landing probe's reading.")
    evidence: str = Field(description="What the probe found.")


class Gate(FrozenModel):
    """The run's verdict."""

    outcome: Outcome
    exit_code: ExitCode
    reasons: list[str] = Field(description="Why, in words, most important first.")
    violations: list[Violation] = Field(
        default_factory=list, description="Every violation observed."
    )
    completion_judged: bool = Field(
        description="False when execution did not complete: completion rules were not judged."
    )
    coverage: list[CoverageCheck] = Field(
        default_factory=list, description="Each schedule entry's status and probe."
    )


class LabRun(FrozenModel):
    """One lab run (run.json)."""

    format_version: Literal[1] = Field(RUN_FORMAT_VERSION, description="Run record version.")
    run_id: str = Field(description="'<scenario>--<agent>--s<seed>'.")
    scenario: Scenario = Field(description="The scenario as it ran.")
    scenario_source: str | None = Field(None, description="The file it came from, if any.")
    scenario_digest: ScenarioDigest
    agent: AgentInfo = Field(description="The agent that ran: name, kind, fixture flag.")
    agent_view: AgentView = Field(description="Exactly what the agent was given.")
    world_initial: WorldState = Field(description="The world when the run started.")
    world_final: WorldState = Field(description="The world when the run ended.")
    streams: Streams = Field(description="requests, deliveries, effects, observations.")
    waits: list[WaitEvent] = Field(default_factory=list, description="The agent's waits.")
    coverage: list[FaultCoverage] = Field(
        default_factory=list, description="What became of each schedule entry."
    )
    execution: Execution = Field(description="How the agent loop ended.")
    measurement: Measurement = Field(description="Counts and virtual time.")
    gate: Gate = Field(description="The verdict (recomputable with evaluate()).")
    timings: Timings = Field(description="Wall-clock figures.")
    process: ProcessReport | None = Field(
        None,
        description="For a trusted local agent: the supervisor's account of its child "
        "process (how it ended, exit status, late requests refused, the log file).",
    )
    client_usage: ClientUsage | None = Field(
        None,
        description="For an MCP run: the model usage the client registered about itself, "
        "with each entry's consistency checks. Apart from measurement.provider_usage (what "
        "the lab observed), never merged with it. None for other agents.",
    )


def _set_aside(path: Path) -> Path | None:
    if not path.exists():
        return None
    n = 1
    while (aside := path.with_name(f"{path.stem}.prev-{n}{path.suffix}")).exists():
        n += 1
    path.rename(aside)
    return aside


def write_run(record: LabRun, out_dir: Path) -> Path:
    """Write ``out_dir/run.json`` atomically, setting an earlier record aside. The same
    record written again (the engine wrote it, then the command's outputs) is left as it
    is: there is nothing to set aside."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RUN_FILE
    body = record.model_dump(mode="json")
    if path.is_file():
        try:
            if LabRun.model_validate_json(path.read_bytes()).model_dump(mode="json") == body:
                return path
        except (OSError, ValidationError):
            pass  # unreadable or another format: set aside below, never overwritten
    _set_aside(path)
    write_json_atomic(path, body)
    return path


def read_run(path: Path) -> LabRun:
    """Read a run record (a run.json or the directory holding one)."""
    if path.is_dir():
        path = path / RUN_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SabotDataError(path, "", "a readable run record", exc.strerror) from None
    raw = parse_json(text, path, expected="JSON")
    try:
        return LabRun.model_validate(raw)
    except ValidationError as exc:
        raise from_validation_error(path, exc) from None
