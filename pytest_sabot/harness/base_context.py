"""What every run context shares, whichever kind of task the cell runs.

A framework adapter is handed one object (the ``RunContext`` of ``core/context.py``). Its
model endpoints, HTTP clients, tools, handoff channel, contract check, gateway exchanges and
final artifact work the same way for a file task (T1-T5, ``pipeline_context.py``) and for a
lab task (T6, ``lab_bridge.py``); :class:`BaseRunContext` holds that part once. What differs
is the world behind the tools and the prompts that describe it: each kind of task's context
builds its tools and writes the three stage prompts, and may act at three hooks (what a
handoff delivers, how one gateway exchange is recorded, which effects the world holds when
the artifact is emitted).

Nothing here holds the task's private spec (SPEC.md I39): the base keeps the cell, the
public view, the run's trace and gateway, and the run's own directory.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypedDict

import httpx

from pytest_sabot.core.context import Messages, ToolHandle
from pytest_sabot.core.frameworks import adapter
from pytest_sabot.core.models.cells import Cell, WaveSpec
from pytest_sabot.core.trace_io import TraceWriter
from pytest_sabot.core.verdict_token import strip_flags_head
from pytest_sabot.gateway import loopback
from pytest_sabot.gateway.client import GatewayClient
from pytest_sabot.harness import prompts
from pytest_sabot.harness.endpoints import scoped_endpoint
from pytest_sabot.tasks import check_contract
from pytest_sabot.tasks.loader import PublicView

if TYPE_CHECKING:
    from pytest_sabot.harness.task_world import Attempt
    from pytest_sabot.operators import Operator, Planted

__all__ = ["BaseRunContext", "RunParts", "emit_injection", "emit_model_call", "run_parts"]


class RunParts(TypedDict):
    """What the context of every kind of task is built from: the cell, its wave and the
    task's public view, and what the harness opened for the attempt (its directory, trace,
    gateway, the run's key there and the model name the frameworks send)."""

    cell: Cell
    wave: WaveSpec
    view: PublicView
    run_dir: Path
    trace: TraceWriter
    gateway: GatewayClient
    run_key: str
    model_name: str


def run_parts(cell: Cell, wave: WaveSpec, view: PublicView, attempt: Attempt) -> RunParts:
    """The parts of the context of ``attempt``, one attempt of ``cell`` in ``wave``."""
    return RunParts(
        cell=cell,
        wave=wave,
        view=view,
        run_dir=attempt.run_dir,
        trace=attempt.trace,
        gateway=attempt.gateway,
        run_key=attempt.run_key,
        model_name=attempt.model_name,
    )


def emit_model_call(trace: TraceWriter, record: Any) -> None:
    """One ``model_call`` event from the gateway's record of the call (docs/TRACE.md)."""
    trace.record(
        "model_call",
        record.agent,
        record.response_text,
        call_index=record.call_index,
        model_requested=record.model_requested,
        model_served=record.model_served,
        prompt_tokens=record.prompt_tokens,
        completion_tokens=record.completion_tokens,
        cached_tokens=record.cached_tokens,
        reasoning_tokens=record.reasoning_tokens,
        latency_ms=record.latency_ms,
        cost_usd=record.cost_usd,
        stream=record.stream,
        downgraded=record.downgraded,
        fixture=record.fixture,
        error=record.error,
        tool_calls=record.tool_calls,
        request_hash=record.request_hash,
    )


def emit_injection(
    trace: TraceWriter, component: str, operator: Operator, planted: Planted
) -> None:
    """The ``injection`` event of what ``operator`` planted at its seam (docs/TRACE.md); its
    seq is kept on the operator, whose landing probe reads the events after it."""
    event = trace.record(
        "injection",
        component,
        operator=operator.id,
        seam=planted.seam,
        target=planted.target,
        original=planted.original,
        injected=planted.injected,
    )
    operator.injection_seq = event.seq


@dataclass(kw_only=True)
class BaseRunContext(ABC):
    """The part of the RunContext (core/context.py) every kind of task shares.

    A subclass sets ``_tools`` in its ``__post_init__`` and writes the stage prompts."""

    cell: Cell
    view: PublicView
    run_dir: Path
    trace: TraceWriter
    gateway: GatewayClient
    run_key: str
    model_name: str
    flags_protocol: bool
    api_key: str = "sabot-local"
    artifact: str | None = field(default=None, init=False)
    effects: dict[str, bool] = field(default_factory=dict, init=False)
    _tools: list[ToolHandle] = field(default_factory=list, init=False)
    _closed: bool = field(default=False, init=False)
    _grants: dict[str, tuple[str, str]] = field(default_factory=dict, init=False)

    @classmethod
    def from_parts(cls, parts: RunParts, **own: Any) -> Self:
        """A context of this kind from the shared ``parts`` and the fields of its own."""
        return cls(
            cell=parts["cell"],
            view=parts["view"],
            run_dir=parts["run_dir"],
            trace=parts["trace"],
            gateway=parts["gateway"],
            run_key=parts["run_key"],
            model_name=parts["model_name"],
            flags_protocol=parts["wave"].flags_protocol,
            **own,
        )

    # ------------------------------------------------------------------ the stage prompts
    @abstractmethod
    def worker_prompt(self, round: int, feedback: str = "") -> Messages:
        """Worker messages for a pass; round 1 carries the reject reason as feedback."""

    @abstractmethod
    def reviewer_prompt(self, delivered: str, round: int) -> Messages:
        """Reviewer messages for the delivered draft (verdict protocol, FLAGS)."""

    @abstractmethod
    def magentic_task(self) -> str:
        """The whole task for a Magentic-style team, FLAGS head line in the contract if on."""

    # ------------------------------------------------------------------ the hooks
    def _deliver(self, channel: str, text: str) -> str:
        """What the receiver of a handoff gets (the text itself unless a seam acts)."""
        return text

    def _record_model_call(self, record: Any) -> None:
        """Record one gateway exchange of this run in the trace."""
        emit_model_call(self.trace, record)

    def _world_effects(self, artifact: str) -> dict[str, bool]:
        """The effects the world must hold, as it holds them when the artifact is emitted
        (none unless the task names some)."""
        return {}

    # ------------------------------------------------------------------ shared
    @property
    def is_magentic(self) -> bool:
        """Whether the run ends in an artifact whose first line is the FLAGS line (a
        Magentic-style team; the framework's adapter declares which configurations)."""
        return adapter(self.cell.framework).flags_head(self.cell.config)

    def base_url(self, agent: str) -> str:
        return self.gateway.base_url(self.run_key, agent)

    def scoped_endpoint(self, agent: str) -> tuple[str, str]:
        return scoped_endpoint(self.gateway, self.run_key, agent, self._grants)

    def http_client(self) -> httpx.Client:
        return loopback.sync_client()

    def http_async_client(self) -> httpx.AsyncClient:
        return loopback.async_client()

    @property
    def tools(self) -> list[ToolHandle]:
        return list(self._tools)

    def handoff(self, sender: str, receiver: str, text: str) -> str:
        channel = f"{sender}->{receiver}"
        delivered = self._deliver(channel, text)
        self.trace.record(
            "message", sender, delivered, sender=sender, receiver=receiver, channel=channel
        )
        return delivered

    def guardrail_text(self) -> str:
        return prompts.guardrail_instruction(self.view)

    def check_contract(self, artifact: str) -> list[str]:
        return check_contract(self.view.contract, artifact)

    def sync_model_calls(self) -> None:
        for record in self.gateway.drain(self.run_key):
            self._record_model_call(record)

    def close_gateway_run(self) -> None:
        """Close this run at the gateway (once) and record the exchanges not drained yet."""
        if self._closed:
            return
        self._closed = True
        for record in self.gateway.close_run(self.run_key):
            self._record_model_call(record)

    def emit(self, text: str) -> None:
        flags_line: str | None = None
        artifact = text
        if self.is_magentic and self.flags_protocol:
            flags_line, artifact = strip_flags_head(text)
        self.artifact = artifact
        self.effects = self._world_effects(artifact)
        self.trace.record(
            "artifact",
            "harness",
            artifact,
            name=self.view.artifact,
            flags_line=flags_line,
            effects=self.effects,
        )
