"""The CrewAI pipeline (crewai 1.15.5), standard sections 5 and 8.

Each stage is its own one-agent ``Crew(process=Process.sequential)``::

    load -> worker crew -> reviewer crew -> revise (worker crew again) -> reviewer crew
                                   |
                                   +-> emit                       (one revise pass at most)

Every agent talks to the run's gateway through CrewAI's native OpenAI provider
(``crewai.LLM(provider="openai", base_url=...)``, which builds an ``OpenAICompletion`` on the
OpenAI SDK, never LiteLLM). No temperature is sent (section 8); neither the SDK client
(``max_retries=0``) nor the agent (``max_retry_limit=0``) retries on its own, and the agent's
tool cache is off so every tool call reaches the harness. The worker's tools are
``BaseTool`` subclasses whose ``_run`` is the harness's ``ToolHandle.invoke``, offered to the
model through native function calling.

Default config: no task guardrail. Guardrail config: the worker ``Task`` gets
``guardrails=[contract, LLMGuardrail(ctx.guardrail_text(), guardrail LLM)]`` and
``guardrail_max_retries=3``. The contract guardrail implements only the published output
contract (``ctx.check_contract``; the fairness rule); the LLM guardrail is CrewAI's own
``LLMGuardrail``, unchanged. CrewAI runs each guardrail in its own retry loop (a re-executed
output is checked again only by the guardrail that failed it, with that guardrail's own
retry count) and announces every outcome, for function and LLM guardrails alike, as
``LLMGuardrailCompletedEvent`` (``guardrail_type`` ``function`` or ``llm``); a failure whose
``retry_count`` is below ``guardrail_max_retries`` re-executes the worker with the error as
context.

Exhaustion (section 5: escalate, the task recorded as failed, never a run error) is read
from those events, not from an exception's wording (SPEC.md I34): a failed outcome whose
``retry_count`` has reached ``guardrail_max_retries`` is CrewAI giving up, and the exception
CrewAI raises right after it ends the run as an escalation whose message is that
exception's text, verbatim. An exception with no exhausting outcome before it is a run
error; an exhausting outcome that CrewAI does not end the task on fails the run loudly.
``tests/adapters/test_crewai_pipeline.py`` pins the 1.15.5 behaviour this depends on.

A failed model call of the LLM guardrail (transport or API error; CrewAI announces it as
``LLMCallFailedEvent`` from the guardrail's LLM) is not a verdict: stock ``LLMGuardrail``
would turn it into ``(False, "Error while validating ...")``, a reject that is retried into
an escalation. The recorder keeps that outcome out of the trace, the next model call of the
run is refused through the ``before_llm_call`` hook, and the run ends as a run error naming
the failed call.

Worker cap (SPEC.md I33): ``max_iter`` is ``WORKER_MODEL_CALL_CAP``. When a worker
execution has used all of it, CrewAI makes one more call of the worker's LLM outside the
executor loop, with no tools and its ``force_final_answer`` message; the recorder sees it
through the ``before_llm_call`` hook (a direct call of the worker LLM right after the
executor's last allowed iteration) and writes a ``cap`` event after that call.

Observation: handlers for ``LLMGuardrailCompletedEvent`` and ``LLMCallFailedEvent``
registered on ``crewai_event_bus`` inside ``scoped_handlers()`` for this run only (CrewAI's
own listeners are set aside for the run and the handlers are gone afterwards). The bus runs
handlers on a thread pool, so the handlers only buffer; the buffer is written to the trace,
in CrewAI's emission order, at fixed points: before every model call (a global
``before_llm_call`` hook registered for the run), before every tool call, and at the end of
every stage. At each of those points the gateway's exchanges are pulled in first
(``ctx.sync_model_calls()``), so the trace keeps the order model reply -> guardrail verdict
-> re-executed worker.

Trace events written here (every other event comes from the harness):

========================  ===========  ==================================================
kind                      component    when
========================  ===========  ==================================================
agent_output              worker       each worker crew's result (stage worker / revise)
review                    reviewer     each reviewer crew's result, full text
retry (source revise)     worker       REJECT with the revise pass unused: the worker
                                       crew is kicked off again carrying the reason
guardrail (contract|llm)  guardrail    every LLMGuardrailCompletedEvent of the worker task
retry (source guardrail)  guardrail    a failed guardrail that CrewAI will retry
escalation                guardrail    the exception after an exhausting guardrail outcome
run_end (task_failed)     pipeline     the run ends on that escalation
cap (worker_model_calls)  worker       a worker execution used max_iter and answered on
                                       CrewAI's final call without tools
========================  ===========  ==================================================
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, create_model

from pytest_sabot.adapters.crewai import _env as _crewai_env
from pytest_sabot.core.context import WORKER_MODEL_CALL_CAP, Messages, RunContext, ToolHandle
from pytest_sabot.core.verdict_token import (
    VERDICT_PATTERN,
    Verdict,
    rejection_text,
    routing_verdict,
)

if TYPE_CHECKING:
    from crewai import Agent, Task
    from crewai.llms.base_llm import BaseLLM
    from crewai.tools import BaseTool

__all__ = [
    "EXHAUSTION_MECHANISM",
    "EXHAUSTION_PATTERN",
    "GUARDRAIL_MAX_RETRIES",
    "MAX_AGENT_ITERATIONS",
    "VERDICT_PATTERN",
    "GuardrailModelCallFailed",
    "GuardrailOutcome",
    "Verdict",
    "args_model",
    "guardrail_outcome_events",
    "is_infrastructure_error",
    "parse_exhaustion",
    "parse_verdict",
    "run",
]

# Standard section 8, guardrail config.
GUARDRAIL_MAX_RETRIES = 3
# The worker's max_iter: the tool-using model calls of one execution before CrewAI asks
# for the final answer (the same cap in every framework, core/context.py).
MAX_AGENT_ITERATIONS = WORKER_MODEL_CALL_CAP


# crewai 1.15.5, Task._invoke_guardrail_function: the terminal exception after
# guardrail_max_retries failed re-executions, for a guardrail list ("guardrail <index>") or a
# single guardrail ("guardrail"). The published mapping matches the escalation's recorded
# message on it (section 5); the adapter itself decides exhaustion from the events (I34).
EXHAUSTION_PATTERN = re.compile(
    r"^Task failed guardrail(?: (\d+))? validation after (\d+) retries\. Last error: (.*)\Z",
    re.DOTALL,
)
EXHAUSTION_MECHANISM = "crewai_guardrail_exhausted"

_WORKER_BACKSTORY = "You carry out one stage of a document pipeline; your instructions follow."
_REVIEWER_BACKSTORY = "You review one stage of a document pipeline; your instructions follow."
_EXPECTED_OUTPUT = "The complete reply the instructions above ask for."


# --------------------------------------------------------------------------- pure parts


# Standard section 5, verdict-token protocol: one shared parser (case-insensitive, first
# match) for routing here and for adjudication in the scorer.
parse_verdict = routing_verdict


def parse_exhaustion(message: str) -> tuple[int | None, int, str] | None:
    """(guardrail index, retries, last error) of CrewAI's exhaustion message, else None."""
    match = EXHAUSTION_PATTERN.match(message)
    if match is None:
        return None
    index = int(match.group(1)) if match.group(1) is not None else None
    return index, int(match.group(2)), match.group(3)


@dataclass(frozen=True)
class GuardrailOutcome:
    """One LLMGuardrailCompletedEvent, reduced to what the trace records."""

    order: int  # CrewAI's emission sequence
    kind: Literal["contract", "llm"]
    success: bool
    retry_count: int
    error: str

    def exhausts(self, max_retries: int) -> bool:
        """A failure CrewAI will not retry: it gives up and raises (section 5 escalate)."""
        return not self.success and self.retry_count >= max_retries


class GuardrailModelCallFailed(RuntimeError):
    """The LLM guardrail's model call failed (transport or API error): a run error."""


@dataclass(frozen=True)
class _CallFailure:
    order: int  # CrewAI's emission sequence
    error: str


def guardrail_outcome_events(
    outcome: GuardrailOutcome, max_retries: int
) -> list[tuple[str, str, str, dict[str, Any]]]:
    """The trace events for one guardrail outcome: (kind, component, text, data).

    Always a ``guardrail`` event; plus a ``retry`` (source guardrail) when the outcome is a
    failure CrewAI will retry, i.e. ``retry_count < max_retries``.
    """
    feedback = "" if outcome.success else outcome.error
    events: list[tuple[str, str, str, dict[str, Any]]] = [
        (
            "guardrail",
            "guardrail",
            feedback,
            {
                "name": outcome.kind,
                "guardrail_kind": outcome.kind,
                "success": outcome.success,
                "retry_count": outcome.retry_count,
                "max_retries": max_retries,
                "feedback": feedback,
            },
        )
    ]
    if not outcome.success and outcome.retry_count < max_retries:
        events.append(("retry", "guardrail", feedback, {"source": "guardrail", "reason": feedback}))
    return events


_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list[Any],
    "object": dict[str, Any],
}


def args_model(handle: ToolHandle) -> type[BaseModel]:
    """A pydantic model for a tool's JSON Schema ``parameters`` (top-level properties)."""
    return _build_args_model(handle.name, handle.parameters)


def _build_args_model(tool_name: str, schema: dict[str, Any]) -> type[BaseModel]:
    properties: dict[str, Any] = schema.get("properties", {}) or {}
    required = set(schema.get("required", []) or [])
    fields: dict[str, Any] = {}
    for name, spec in properties.items():
        json_type = spec.get("type") if isinstance(spec, dict) else None
        py_type: Any = _JSON_TYPES.get(json_type, Any) if isinstance(json_type, str) else Any
        description = spec.get("description", "") if isinstance(spec, dict) else ""
        if name in required:
            fields[name] = (py_type, Field(description=description))
        else:
            fields[name] = (py_type | None, Field(None, description=description))
    model_name = "".join(part.title() for part in re.split(r"[^A-Za-z0-9]+", tool_name))
    return create_model(f"{model_name or 'Tool'}Args", **fields)


# --------------------------------------------------------------------------- the run


class _Recorder:
    """Buffers CrewAI's events for this run and writes them at fixed points; follows the
    worker's executor iterations to see a capped execution end."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.open = True
        self.task_ids: set[str] = set()
        self.worker_llm: Any = None
        self.guardrail_llm: Any = None
        self.round = 0
        self.exhausted: GuardrailOutcome | None = None
        self.guardrail_call_failure: str | None = None
        self._pending: list[GuardrailOutcome | _CallFailure] = []
        self._lock = threading.Lock()
        self._last_iteration: int | None = None
        self._max_iter: int | None = None
        self._cap_pending = False

    def on_guardrail(self, source: Any, event: Any) -> None:
        if not self.open or str(getattr(event, "task_id", "")) not in self.task_ids:
            return
        kind: Literal["contract", "llm"] = (
            "llm" if getattr(event, "guardrail_type", None) == "llm" else "contract"
        )
        outcome = GuardrailOutcome(
            order=int(getattr(event, "emission_sequence", 0) or 0),
            kind=kind,
            success=bool(event.success),
            retry_count=int(event.retry_count),
            error=str(event.error or ""),
        )
        with self._lock:
            self._pending.append(outcome)

    def on_call_failed(self, source: Any, event: Any) -> None:
        if not self.open or self.guardrail_llm is None or source is not self.guardrail_llm:
            return
        failure = _CallFailure(int(getattr(event, "emission_sequence", 0) or 0), str(event.error))
        with self._lock:
            self._pending.append(failure)

    def checkpoint(self) -> None:
        """Pull the gateway's exchanges, then write the buffered guardrail outcomes."""
        if not self.open:
            return
        from crewai.events import crewai_event_bus

        crewai_event_bus.flush()
        self.ctx.sync_model_calls()
        with self._lock:
            pending = sorted(self._pending, key=lambda o: o.order)
            self._pending.clear()
        for item in pending:
            if isinstance(item, _CallFailure):
                self.guardrail_call_failure = self.guardrail_call_failure or item.error
                continue
            if item.kind == "llm" and self.guardrail_call_failure is not None:
                continue  # the guardrail's model call failed: no verdict to record
            if item.exhausts(GUARDRAIL_MAX_RETRIES):
                self.exhausted = item
            for kind, component, text, data in guardrail_outcome_events(
                item, GUARDRAIL_MAX_RETRIES
            ):
                self.ctx.trace.emit(kind, component, text, **data)
        if self._cap_pending:
            self._cap_pending = False
            self.ctx.trace.emit(
                "cap",
                "worker",
                cap="worker_model_calls",
                limit=self._max_iter or MAX_AGENT_ITERATIONS,
                setting="max_iter",
                ending="forced_final_answer",
                round=self.round,
            )

    def before_model_call(self, context: Any) -> bool | None:
        """The run's before_llm_call hook: write what is buffered, follow the worker's
        iterations, and refuse every call once the guardrail's model call has failed."""
        self.checkpoint()
        if self.guardrail_call_failure is not None:
            return False
        if self.worker_llm is None or context.llm is not self.worker_llm:
            return None
        if context.executor is not None:
            self._last_iteration = int(context.iterations)
            self._max_iter = int(getattr(context.executor, "max_iter", MAX_AGENT_ITERATIONS))
        elif self._last_iteration is not None and self._max_iter is not None:
            # A direct call of the worker's LLM after the executor's last allowed iteration
            # is CrewAI asking for the final answer (handle_max_iterations_exceeded).
            if self._last_iteration >= self._max_iter - 1:
                self._cap_pending = True
            self._last_iteration = None
        return None


@functools.cache
def _loopback_completion() -> type[BaseLLM]:
    """CrewAI's native OpenAI provider (``OpenAICompletion``, what ``crewai.LLM(provider=
    "openai")`` builds), handed the run's HTTP clients.

    The provider builds its OpenAI SDK clients itself, each with a fresh httpx client that
    loads the CA bundle again, and offers no field for an ``http_client`` of each kind
    (``client_params`` goes to the sync and the async SDK client alike). This subclass adds
    the two fields ChatOpenAI has, ``http_client`` and ``http_async_client``, and builds
    the SDK clients on them (crewai 1.15.5: ``_build_sync_client`` /
    ``_build_async_client``); everything else is the provider unchanged."""
    from crewai.llms.providers.openai.completion import OpenAICompletion
    from openai import AsyncOpenAI, OpenAI
    from pydantic import Field

    class LoopbackCompletion(OpenAICompletion):
        http_client: Any = Field(default=None, exclude=True)
        http_async_client: Any = Field(default=None, exclude=True)

        def _build_sync_client(self) -> Any:
            params = self._get_client_params()
            if self.http_client is not None:
                params["http_client"] = self.http_client
            return OpenAI(**params)

        def _build_async_client(self) -> Any:
            params = self._get_client_params()
            if self.http_async_client is not None:
                params["http_client"] = self.http_async_client
            return AsyncOpenAI(**params)

    return LoopbackCompletion


def _native_llm(ctx: RunContext, agent: str) -> BaseLLM:
    # The native OpenAI provider for any model name (never LiteLLM), on the run's clients.
    # Crews are kicked off synchronously: the async client is there because the provider
    # builds its async side too.
    llm: BaseLLM = _loopback_completion()(
        model=ctx.model_name,
        provider="openai",
        base_url=ctx.base_url(agent),
        api_key=ctx.api_key,
        max_retries=0,
        http_client=ctx.http_client(),
        http_async_client=ctx.http_async_client(),
    )
    return llm


@functools.cache
def _harness_tool_class() -> type[BaseTool]:
    """The one ``BaseTool`` subclass every run's tools are instances of, built once per
    process: a class statement on a pydantic model costs milliseconds, per tool and per run
    when it stood inside the run. What a run owns (its ``ToolHandle``, the recorder's
    checkpoint) is handed to each instance, never kept on the class."""
    from crewai.tools import BaseTool
    from pydantic import PrivateAttr

    class HarnessTool(BaseTool):
        _handle: Any = PrivateAttr(default=None)
        _before_call: Any = PrivateAttr(default=None)
        _required: frozenset[str] = PrivateAttr(default=frozenset())

        def _run(self, *args: Any, **kwargs: Any) -> str:
            self._before_call()
            required = self._required
            arguments = {k: v for k, v in kwargs.items() if k in required or v is not None}
            result: str = self._handle.invoke(arguments)
            return result

    return HarnessTool


@functools.lru_cache(maxsize=256)
def _args_model_for(name: str, parameters_json: str) -> type[BaseModel]:
    """``args_model`` once per tool name and schema: the model is a class, immutable once
    built, so runs of the same task share it. The key keeps the schema's own key order (the
    fields, and so the ``required`` list the model is shown, follow it)."""
    return _build_args_model(name, json.loads(parameters_json))


def _cached_args_model(handle: ToolHandle) -> type[BaseModel]:
    try:
        key = json.dumps(handle.parameters)
    except (TypeError, ValueError):
        return args_model(handle)
    return _args_model_for(handle.name, key)


def _crewai_tool(handle: ToolHandle, before_call: Callable[[], None]) -> BaseTool:
    tool: BaseTool = _harness_tool_class()(
        name=handle.name, description=handle.description, args_schema=_cached_args_model(handle)
    )
    # The run's own parts, on this instance only (pydantic private attributes).
    tool._handle = handle  # type: ignore[attr-defined]
    tool._before_call = before_call  # type: ignore[attr-defined]
    tool._required = frozenset(handle.parameters.get("required", []) or [])  # type: ignore[attr-defined]
    return tool


def is_infrastructure_error(exc: BaseException) -> bool:
    """True when an exception (or one it was raised from) is a transport/API failure of the
    model endpoint rather than an answer of the model."""
    import openai

    visited: set[int] = set()
    seen: BaseException | None = exc
    while seen is not None and id(seen) not in visited:
        if isinstance(seen, openai.APIError | ConnectionError | TimeoutError):
            return True
        if isinstance(seen, GuardrailModelCallFailed):
            return True
        visited.add(id(seen))
        seen = seen.__cause__ or seen.__context__
    return False


def _llm_guardrail(description: str, llm: BaseLLM) -> Any:
    """CrewAI's own LLM guardrail, unchanged: a failed model call inside it is caught by
    the recorder from ``LLMCallFailedEvent`` (module docstring), not by overriding it."""
    from crewai.tasks.llm_guardrail import LLMGuardrail

    return LLMGuardrail(description=description, llm=llm)


def _contract_guardrail(ctx: RunContext) -> Callable[[Any], tuple[bool, Any]]:
    def contract(output: Any) -> tuple[bool, Any]:
        failures = ctx.check_contract(output.raw)
        if failures:
            return (False, "; ".join(failures))
        return (True, output.raw)

    return contract


class _Pipeline:
    def __init__(self, ctx: RunContext, recorder: _Recorder) -> None:
        self.ctx = ctx
        self.recorder = recorder
        self.guarded = ctx.cell.config == "guardrail"
        self.worker_llm = _native_llm(ctx, "worker")
        self.reviewer_llm = _native_llm(ctx, "reviewer")
        self.guardrail_llm = _native_llm(ctx, "guardrail") if self.guarded else None
        recorder.worker_llm = self.worker_llm
        recorder.guardrail_llm = self.guardrail_llm
        self.tools = [_crewai_tool(h, recorder.checkpoint) for h in ctx.tools]

    def _agent(
        self, role: str, backstory: str, prompt: Messages, llm: BaseLLM, tools: list[BaseTool]
    ) -> Agent:
        from crewai import Agent

        # The harness prompt rides in the goal and the description; the leading newline
        # starts each of its section headers on a line of its own inside CrewAI's template.
        return Agent(
            role=role,
            goal="\n" + prompt.system,
            backstory=backstory,
            llm=llm,
            tools=tools,
            allow_delegation=False,
            cache=False,
            max_iter=MAX_AGENT_ITERATIONS,
            max_retry_limit=0,
            verbose=False,
        )

    def _kickoff(self, agent: Agent, task: Task) -> str:
        from crewai import Crew, Process

        crew = Crew(
            agents=[agent],
            tasks=[task],
            process=Process.sequential,
            verbose=False,
            tracing=False,
        )
        try:
            output: Any = crew.kickoff()
            return str(output.raw)
        finally:
            self.recorder.checkpoint()

    def work(self, round_: int, feedback: str) -> str:
        """One worker crew; raises CrewAI's exhaustion exception through."""
        from crewai import Task

        prompt = self.ctx.worker_prompt(round_, feedback)
        self.recorder.round = round_
        agent = self._agent("worker", _WORKER_BACKSTORY, prompt, self.worker_llm, self.tools)
        guardrails: list[Any] = []
        if self.guarded:
            assert self.guardrail_llm is not None
            guardrails = [
                _contract_guardrail(self.ctx),
                _llm_guardrail(self.ctx.guardrail_text(), self.guardrail_llm),
            ]
        task = Task(
            description="\n" + prompt.user,
            expected_output=_EXPECTED_OUTPUT,
            agent=agent,
            guardrails=guardrails or None,
            guardrail_max_retries=GUARDRAIL_MAX_RETRIES,
        )
        self.recorder.task_ids.add(str(task.id))
        text = self._kickoff(agent, task)
        self._check_ended_cleanly()
        if self.recorder.exhausted is not None:
            raise RuntimeError(
                "crewai announced guardrail exhaustion (retry_count "
                f"{self.recorder.exhausted.retry_count} of {GUARDRAIL_MAX_RETRIES}) but did not "
                "end the task; this adapter reads exhaustion as crewai 1.15.5 signals it"
            )
        stage = "worker" if round_ == 0 else "revise"
        self.ctx.trace.emit("agent_output", "worker", text, stage=stage, round=round_)
        return text

    def review(self, delivered: str, round_: int) -> tuple[Verdict, str]:
        """The reviewer's verdict and its reply as written."""
        from crewai import Task

        prompt = self.ctx.reviewer_prompt(delivered, round_)
        agent = self._agent("reviewer", _REVIEWER_BACKSTORY, prompt, self.reviewer_llm, [])
        task = Task(description="\n" + prompt.user, expected_output=_EXPECTED_OUTPUT, agent=agent)
        text = self._kickoff(agent, task)
        self.ctx.trace.emit("review", "reviewer", text, round=round_)
        return parse_verdict(text), text

    def _check_ended_cleanly(self) -> None:
        """A failed model call of the LLM guardrail makes the run a run error."""
        failure = self.recorder.guardrail_call_failure
        if failure is not None:
            raise GuardrailModelCallFailed(f"the LLM guardrail's model call failed: {failure}")

    def run(self) -> None:
        try:
            draft = self.work(0, "")
            delivered = self.ctx.handoff("worker", "reviewer", draft)
            verdict, reply = self.review(delivered, 0)
            if verdict.decision == "reject":
                reason, feedback = verdict.reason, rejection_text(reply)
                self.ctx.trace.emit("retry", "worker", reason, source="revise", reason=reason,
                                    feedback=feedback)
                draft = self.work(1, feedback)
                delivered = self.ctx.handoff("worker", "reviewer", draft)
                self.review(delivered, 1)
        except GuardrailModelCallFailed:
            raise
        except Exception as exc:
            self.recorder.checkpoint()
            self._check_ended_cleanly()
            exhausted = self.recorder.exhausted
            if exhausted is None:
                raise
            # Section 5 escalate: the exception CrewAI raised after its exhausting outcome.
            message = str(exc)
            self.ctx.trace.emit(
                "escalation",
                "guardrail",
                message,
                mechanism=EXHAUSTION_MECHANISM,
                message=message,
                retry_count=exhausted.retry_count,
                max_retries=GUARDRAIL_MAX_RETRIES,
            )
            self.ctx.trace.emit(
                "run_end", "pipeline", message, status="task_failed", detail=message
            )
            return
        self.ctx.emit(delivered)


def run(ctx: RunContext) -> None:
    """Run one cell's CrewAI pipeline to its end, recording its surfaces in the trace."""
    with _crewai_env.isolated(ctx.run_dir):
        _crewai_env.load_crewai()
        from crewai.events import crewai_event_bus
        from crewai.events.types.llm_events import LLMCallFailedEvent
        from crewai.events.types.llm_guardrail_events import LLMGuardrailCompletedEvent
        from crewai.hooks.llm_hooks import (
            register_before_llm_call_hook,
            unregister_before_llm_call_hook,
        )

        recorder = _Recorder(ctx)

        def before_model_call(context: Any) -> bool | None:
            return recorder.before_model_call(context)

        with crewai_event_bus.scoped_handlers():
            crewai_event_bus.on(LLMGuardrailCompletedEvent)(recorder.on_guardrail)
            crewai_event_bus.on(LLMCallFailedEvent)(recorder.on_call_failed)
            register_before_llm_call_hook(before_model_call)
            try:
                _Pipeline(ctx, recorder).run()
            finally:
                unregister_before_llm_call_hook(before_model_call)
                crewai_event_bus.flush()
                recorder.checkpoint()
                recorder.open = False
