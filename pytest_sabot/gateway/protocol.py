"""Wire formats of the gateway: chat-completion requests, error bodies, the control API.

Chat-completion requests come from real framework clients, which send many optional
fields; only the fields the gateway acts on are typed and the rest are kept as sent.
The control API (``/sabot/...``) and the exchange records are the gateway's own formats
and forbid unknown fields.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pytest_sabot.core.models.base import StrictModel


class ChatRequest(BaseModel):
    """The part of an OpenAI chat-completion request the gateway reads."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(description="Model name the client asked for (echoed in responses).")
    messages: list[dict[str, Any]] = Field(min_length=1, description="Conversation so far.")
    stream: bool | None = Field(False, description="Whether the client wants server-sent events.")
    stream_options: dict[str, Any] | None = Field(
        None, description="{'include_usage': true} asks for a final usage chunk."
    )
    max_tokens: int | None = Field(None, description="Legacy output cap.")
    max_completion_tokens: int | None = Field(None, description="Output cap incl. reasoning.")

    @property
    def wants_stream(self) -> bool:
        return bool(self.stream)

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.get("include_usage"))


class Downgrade(StrictModel):
    """The O4 plan: from ``from_call`` on, one agent is served by a weaker model."""

    agent: str = Field(description="Agent name as it appears in the base URL path.")
    from_call: int = Field(ge=0, description="First 0-based call index of that agent to swap.")
    model: str | None = Field(
        None,
        description=(
            "Model that serves the swapped calls: a full spec ('openai:gpt-5.6-luna', "
            "'sim:realistic-weak') or a bare name in the run's backend family. For a sim "
            "run anything but an explicit 'sim:' spec (None, or the wave's live downgrade "
            "model) means the persona's '-weak' tier."
        ),
    )


# A cell id names a folder of recordings and traces: printable, no path separators.
CELL_ID_PATTERN = r"^[A-Za-z0-9._~+-]{1,200}$"


class RunRegistration(StrictModel):
    """Body of POST /sabot/runs: announce a run before its first model call."""

    label: str = Field(
        min_length=1,
        max_length=300,
        description=(
            "The caller's name for the run, e.g. '<cell_id>~a1'. Recorded with each exchange; "
            "it is a name, not a credential: the gateway answers with the run key."
        ),
    )
    cell_id: str = Field(
        pattern=CELL_ID_PATTERN,
        description="Cell the run belongs to (a folder name: letters, digits, '._~+-').",
    )
    seed: int = Field(description="The cell's registered seed (drives the embedded model).")
    model: str = Field(description="'sim', 'sim:<persona>', 'openai:<model>' or 'replay:<dir>'.")
    downgrade: Downgrade | None = Field(None, description="O4 plan, None for other runs.")
    account: str | None = Field(
        None,
        max_length=100,
        description=(
            "Key of the session account (POST /sabot/sessions) the run's calls are charged "
            "to beside the gateway's own cap; None: the gateway's cap only."
        ),
    )
    max_calls: int | None = Field(
        None,
        ge=1,
        description=(
            "The run's model-call cap (the runaway guard, SPEC I152): every call past it is "
            "refused with 'sabot_runaway'; None: no cap."
        ),
    )

    @field_validator("cell_id")
    @classmethod
    def _not_a_dot_folder(cls, value: str) -> str:
        if value in (".", ".."):
            raise ValueError("a cell id cannot be '.' or '..'")
        return value


class RunGrant(StrictModel):
    """Body of POST /sabot/runs/<run key>/grant: a credential for one agent of the run."""

    agent: str = Field(
        min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._-]+$",
        description="The agent the credential calls as, e.g. 'worker'.",
    )


class RunGranted(StrictModel):
    """Answer to a grant: the credential and where it is accepted."""

    api_key: str = Field(
        description=(
            "Bearer token that opens this run's chat completions and model list as this agent "
            "and nothing else; it ends when the run is closed."
        )
    )
    base_path: str = Field(
        description="Path of the scoped door under the gateway's origin ('/v1')."
    )


class RunRegistered(StrictModel):
    """Answer to POST /sabot/runs."""

    run_key: str = Field(
        description=(
            "Unguessable key of the run, chosen by the gateway and given only to the "
            "registering caller: it names the run in agent base URLs and in drain/close."
        )
    )
    label: str = Field(description="The caller's name for the run, as registered.")
    model: str = Field(description="Model spec that serves the run.")
    downgrade_model: str | None = Field(None, description="Model spec of the O4 swap, if any.")
    recording: bool = Field(False, description="Whether the run's exchanges are recorded.")


class Usage(StrictModel):
    """Token counts as the serving backend reported them (None = not reported)."""

    prompt_tokens: int | None = Field(None, description="Input tokens, cached ones included.")
    completion_tokens: int | None = Field(None, description="Output tokens incl. reasoning.")
    cached_tokens: int | None = Field(None, description="Input tokens served from cache.")
    reasoning_tokens: int | None = Field(None, description="Output tokens spent reasoning.")


class ExchangeRecord(StrictModel):
    """One chat-completion exchange, as drained by the harness and written to recordings."""

    run_key: str = Field(
        description="Label of the run the exchange belongs to (never the gateway's run key)."
    )
    cell_id: str = Field(description="Cell of that run.")
    agent: str = Field(description="Agent name from the base URL path.")
    call_index: int = Field(description="0-based index of this agent's calls within the run.")
    model_requested: str = Field(description="The model name the client sent.")
    model_served: str = Field(description="Model spec that actually answered (O4 probe).")
    downgraded: bool = Field(False, description="True when the O4 plan served this call.")
    fixture: bool = Field(
        False, description="True for the embedded model: an acceptance fixture, not a measurement."
    )
    prompt_tokens: int | None = Field(None, description="Reported input tokens (None: unknown).")
    completion_tokens: int | None = Field(None, description="Reported output tokens.")
    cached_tokens: int | None = Field(None, description="Reported cached input tokens.")
    reasoning_tokens: int | None = Field(None, description="Reported reasoning tokens.")
    latency_ms: float | None = Field(None, description="Wall time inside the gateway.")
    cost_usd: float | None = Field(None, description="None means unknown, never zero.")
    stream: bool = Field(False, description="Whether the client asked for SSE.")
    tool_calls: list[dict[str, Any]] = Field(
        default_factory=list, description="Tool calls of the served message (OpenAI shape)."
    )
    request_hash: str = Field(description="sha256 of the canonical (scrubbed) request JSON.")
    response_text: str = Field("", description="Assistant message content served.")
    error: str | None = Field(None, description="Error served instead of a completion.")

    def model_call_data(self) -> dict[str, Any]:
        """The fields of a trace ``model_call`` event payload (models.trace.ModelCallData)."""
        return self.model_dump(mode="json", include=set(MODEL_CALL_FIELDS))


MODEL_CALL_FIELDS = (
    "call_index",
    "model_requested",
    "model_served",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "reasoning_tokens",
    "latency_ms",
    "cost_usd",
    "stream",
    "tool_calls",
    "request_hash",
)


class RecordedExchange(StrictModel):
    """One line of <record_dir>/<cell_id>/exchanges.jsonl (secrets scrubbed)."""

    record: ExchangeRecord = Field(description="The drained exchange summary.")
    request: dict[str, Any] = Field(description="The request body as received (scrubbed).")
    response: dict[str, Any] | None = Field(
        None, description="The completion served to the client (scrubbed), None on error."
    )
    error_status: int | None = Field(None, description="HTTP status served on error.")
    error_body: dict[str, Any] | None = Field(None, description="Error body served.")


class BudgetState(StrictModel):
    """Spend so far against the hard cap."""

    budget_usd: float | None = Field(description="Hard cap across all runs (None = no cap).")
    spent_usd: float = Field(description="Spend computed from reported usage.")
    reserved_usd: float = Field(description="Held for calls in flight or with unknown usage.")
    unknown_cost_calls: int = Field(description="Upstream calls whose usage was not reported.")
    exhausted: bool = Field(description="True once a call was refused for budget.")
    ledger: str | None = Field(
        None, description="The project's spend ledger the cap is kept in (None: this gateway)."
    )
    project_spent_usd: float | None = Field(
        None, description="The project's spend from reported usage, all sessions together."
    )
    project_committed_usd: float | None = Field(
        None, description="The project's spend plus every hold and unknown cost: what the cap sees."
    )


class GatewayStats(StrictModel):
    """Body of GET /sabot/stats."""

    calls: int = Field(description="Chat completions answered (any backend).")
    upstream_calls: int = Field(description="Requests sent to a live upstream (incl. retries).")
    upstream_retries: int = Field(
        0, ge=0, description="Upstream attempts that repeated a failed one (429, 5xx, timeout)."
    )
    fixture_calls: int = Field(description="Calls served by the embedded model.")
    errors: int = Field(description="Chat completions answered with an error body.")
    runs_open: int = Field(description="Registered runs not yet closed.")
    concurrency_limit: int = Field(description="Current upstream concurrency limit.")
    budget: BudgetState


class SessionRegistration(StrictModel):
    """Body of POST /sabot/sessions: a session's own spend cap, held by this gateway for
    every run registered under the account it answers with."""

    session: str = Field(
        min_length=1, max_length=200, description="Run id of the pytest session."
    )
    budget_usd: float = Field(ge=0, description="The session's cap (--sabot-budget-usd).")
    spend_ledger: str | None = Field(
        None,
        description=(
            "Absolute directory of the session's spend ledger (spend-ledger.json): the cap is "
            "the project's there (None: this gateway's figures for the session only)."
        ),
    )


class SessionRegistered(StrictModel):
    """Answer to POST /sabot/sessions."""

    account: str = Field(
        description="Unguessable key of the account; runs name it in their registration."
    )
    session: str = Field(description="The session's run id, as registered.")
    budget: BudgetState = Field(description="The account's figures so far.")


def error_body(
    message: str, type_: str, code: str | None, param: str | None = None
) -> dict[str, Any]:
    """An OpenAI-shaped error body."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept: the form that is hashed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def encode_body(value: Any) -> bytes:
    """The exact bytes served for a JSON body (key order as built, compact)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
