"""The lab tool bridge: a framework pipeline working a lab task (T6) against the lab world.

The world lives in the harness process, like the gateway: each cell of a lab task owns one
:class:`~pytest_sabot.lab.LabSession` (the helpdesk seeded with the cell's seed, armed with
the cell's fault, O7..O11, or none for a baseline). The pipeline reaches it only through
tool calls: the context hands the adapter one ``ToolHandle`` per lab tool (and ``wait``,
the lab's virtual sleep), and every call goes through :class:`LabSeams` to the session's
boundary, where the fault acts at the transaction boundary and the lab records its four
evidence streams.

Two records, kept apart:

* the Sabot trace (``events.jsonl``): what the pipeline asked and was shown (``tool_call``,
  ``tool_result``), the ``injection`` the first time the fault acted, the landing ``probe``
  and every framework surface the adapter records. Nothing of the lab's deliveries or
  committed effects enters it;
* the lab record (``run.json`` in the same cell directory): the four streams, the world
  before and after, the coverage and the lab gate, written by :func:`finish_lab`.

What the adapter receives reaches no ground truth (SPEC.md I39): the session runs with the
request, the world and the fault entry (the injection plan); the expected counts stay on
the harness side and are handed to the lab only when the run is judged, and the operator's
ground-truth note never leaves the private spec.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

from pytest_sabot.core.context import Messages, ToolHandle
from pytest_sabot.core.model_spec import ModelSpec
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.trace_io import TraceWriter
from pytest_sabot.harness import lab_prompts
from pytest_sabot.harness.base_context import BaseRunContext, RunParts, emit_injection, run_parts
from pytest_sabot.harness.base_world import BaseWorld
from pytest_sabot.lab.agent import AgentStopped, CallHeld, LimitReached
from pytest_sabot.lab.catalog import ToolContract, build_catalog
from pytest_sabot.lab.engine import LabSession
from pytest_sabot.lab.record import AgentInfo, LabRun, ProviderUsage, write_run
from pytest_sabot.lab.scenario import Expectations, Scenario
from pytest_sabot.lab.task import (
    LabOperatorSpec,
    LabPrivateSpec,
    LabPublicView,
    cell_scenario,
    cell_scenario_name,
)
from pytest_sabot.operators import LabFault, Planted, arm_lab
from pytest_sabot.tasks.loader import PrivateSpec, PublicView
from pytest_sabot.tasks.world import Exchange, format_tool_log

if TYPE_CHECKING:
    from pytest_sabot.harness.task_world import Attempt

__all__ = [
    "LabPipelineContext",
    "LabSeams",
    "LabTaskWorld",
    "finish_lab",
    "lab_pass",
    "lab_pipeline_context",
    "lab_scenario",
]

_SIMPLE = ("string", "integer", "number", "boolean")


def _plain_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A catalog argument schema as framework tools take it: each optional argument typed
    plainly (``anyOf [T, null]`` becomes ``T``: leaving it out means null), no titles."""
    properties: dict[str, Any] = {}
    for name, spec in (schema.get("properties") or {}).items():
        spec = dict(spec)
        options = spec.pop("anyOf", None)
        if options:
            kept = [o for o in options if o.get("type") != "null"]
            if len(kept) == 1:
                spec = {**kept[0], **spec}
        spec.pop("title", None)
        if spec.get("default", "x") is None:
            spec.pop("default")
        if spec.get("type") not in _SIMPLE and "enum" not in spec:
            spec["type"] = "string"
        properties[name] = spec
    return {
        "type": "object",
        "properties": properties,
        "required": [r for r in schema.get("required", []) if r in properties],
    }


def _answer(ok: bool, **body: Any) -> str:
    """An answer in the observations' JSON form (for the wait tool and a stopped run)."""
    return json.dumps({"ok": ok, **body}, sort_keys=True)


class LabSeams:
    """The harness side of the lab tools: routes each call to the cell's lab session and
    records the request and what the agent was shown in the trace; records the injection
    the first time the cell's fault acts. Calls may come from several threads.

    A call the cell's fault holds (a hung tool, O12) never returns an answer: the calling
    thread waits in real time, for ``hang_bound_s`` (the matrix's bound, SPEC I131) at
    most. A pipeline whose own timeout fires first stops waiting and may act until then
    (the world answers its further calls with ``run_stopped``: the lab's clock is past the
    deadline); at the bound the cell's deadline is reached either way: ``deadline``
    says so, ``on_deadline`` runs (the gateway run closes, so the pipeline cannot go on),
    and the held call raises :class:`~pytest_sabot.lab.agent.CallHeld` into the pipeline."""

    def __init__(self, trace: TraceWriter, session: LabSession, operator: LabFault | None,
                 hang_bound_s: float | None = None) -> None:
        self.trace = trace
        self.session = session
        self.operator = operator
        self.hang_bound_s = hang_bound_s
        self.exchanges: list[Exchange] = []
        self.round = 0
        self.deadline: str | None = None
        """Set when the cell's deadline stopped a run held on a call: what was held."""
        self.on_deadline: Any = None
        self._released = threading.Event()
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def invoke(self, tool: str, arguments: dict[str, Any]) -> str:
        with self._lock:
            number = self._counts.get(tool, 0) + 1
            self._counts[tool] = number
            call_id = f"{tool}#{number}"
            self.trace.record("tool_call", "worker", tool=tool, call_id=call_id,
                            arguments=dict(arguments))
            try:
                ok, shown = self._route(tool, arguments)
            except CallHeld as held:
                self._note_activation(tool, number, "")
                hold: CallHeld | None = held
            else:
                hold = None
                self._note_activation(tool, number, shown)
                self.trace.record("tool_result", "worker", shown, tool=tool, call_id=call_id,
                                ok=ok)
                self.exchanges.append(Exchange(tool, call_id, dict(arguments), shown,
                                               self.round))
        if hold is None:
            return shown
        raise self._wait(hold, call_id)

    def _wait(self, held: CallHeld, call_id: str) -> CallHeld:
        """Hold the calling thread until the cell's deadline (or the run's release); the
        exception the held call then raises."""
        if self.hang_bound_s is None:
            raise RuntimeError("a fault held a tool call, but the matrix declares no "
                               "hang_bound_s to hold it for")
        self._released.wait(self.hang_bound_s)
        with self._lock:
            if self.deadline is None:
                self.deadline = (f"the cell's deadline ({self.hang_bound_s:g}s hang bound) was "
                                 f"reached while {call_id} was held unanswered")
                if self.on_deadline is not None:
                    self.on_deadline()
        return held

    def release(self) -> None:
        """The run has ended: a call still held stops waiting."""
        self._released.set()

    def _route(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        context = self.session.context
        try:
            if tool == lab_prompts.WAIT_TOOL:
                ms = arguments.get("ms")
                context.sleep(ms if isinstance(ms, int) and not isinstance(ms, bool) else -1)
                return True, _answer(True, result={"waited_ms": ms})
            observation = context.call_tool(tool, arguments)
        except ValueError as exc:  # a malformed wait
            return False, _answer(False, error={"code": "invalid_arguments", "message": str(exc)})
        except CallHeld:  # a hung tool: never answered (invoke holds the thread)
            raise
        except LimitReached as exc:  # the run's deadline or budget: nothing more reaches it
            return False, _answer(False, error={"code": "run_stopped", "message": str(exc)})
        return observation.ok, observation.to_text()

    def _note_activation(self, tool: str, number: int, shown: str) -> None:
        """Record the injection the first time the fault acted (``shown``: what the agent
        was shown, empty for a held call)."""
        op = self.operator
        if op is None or op.planted is not None:
            return
        for coverage in self.session.coverage():
            if coverage.id != op.entry.id or not coverage.activations:
                continue
            first = coverage.activations[0]
            op.planted = Planted("transaction", f"tool:{tool}#{number}", first.note, shown)
            emit_injection(self.trace, "harness", op, op.planted)

    def tool_log_text(self) -> str:
        """The TOOL LOG of the latest worker pass."""
        latest = max([self.round, *(ex.round for ex in self.exchanges)])
        return format_tool_log([ex for ex in self.exchanges if ex.round == latest])


@dataclass(kw_only=True)
class LabPipelineContext(BaseRunContext):
    """The RunContext of a lab-task cell (core/context.py for the stage protocol;
    base_context.py for what every run context shares)."""

    seams: LabSeams
    catalog: tuple[ToolContract, ...]
    started: float = field(default_factory=time.perf_counter, init=False)

    def __post_init__(self) -> None:
        # The cell's deadline on a held call ends the run: the pipeline's model calls fail
        # from then on, so it stops instead of running on past its deadline.
        self.seams.on_deadline = self.close_gateway_run
        handles = [
            ToolHandle(
                name=c.name,
                description=lab_prompts.tool_description(c),
                parameters=_plain_schema(c.arguments),
                invoke=self._invoker(c.name),
                role="data",
            )
            for c in self.catalog
        ]
        handles.append(ToolHandle(
            name=lab_prompts.WAIT_TOOL, description=lab_prompts.WAIT_DESCRIPTION,
            parameters=dict(lab_prompts.WAIT_PARAMETERS),
            invoke=self._invoker(lab_prompts.WAIT_TOOL), role="data",
        ))
        self._tools = handles

    def _invoker(self, name: str) -> Any:
        seams = self.seams

        def invoke(arguments: dict[str, Any]) -> str:
            return seams.invoke(name, arguments)

        return invoke

    def worker_prompt(self, round: int, feedback: str = "") -> Messages:
        self.seams.round = round  # the reviewer's tool log shows this pass's calls
        return lab_prompts.worker_messages(self.view, self.catalog, round, feedback)

    def reviewer_prompt(self, delivered: str, round: int) -> Messages:
        return lab_prompts.reviewer_messages(self.view, self.catalog, delivered,
                                             self.seams.tool_log_text(), round,
                                             self.flags_protocol)

    def magentic_task(self) -> str:
        return lab_prompts.magentic_task(self.view, self.catalog, self.flags_protocol)


def lab_scenario(cell: Cell, view: PublicView, private: PrivateSpec) -> Scenario:
    """The whole scenario of a lab cell (the harness side: with the expected counts)."""
    assert isinstance(view, LabPublicView) and isinstance(private, LabPrivateSpec), \
        "not a lab task"
    fault = None
    if cell.operator is not None:
        spec = private.operator(cell.operator)
        assert isinstance(spec, LabOperatorSpec), f"{cell.operator} is not a lab operator"
        fault = spec.fault
    return cell_scenario(
        view.lab, private.lab, name=cell_scenario_name(cell.id), seed=cell.seed, fault=fault,
        description=f"{view.task_id} {view.title}: cell {cell.id}",
    )


def lab_pipeline_context(
    *, scenario: Scenario, operator: LabFault | None, **parts: Unpack[RunParts]
) -> LabPipelineContext:
    """The context handed to the adapter of a lab-task cell. Its session runs the cell's
    scenario without the expected counts (they judge the run, on the harness side)."""
    view = parts["view"]
    assert isinstance(view, LabPublicView), "not a lab task"
    session = LabSession(scenario.model_copy(update={"expect": Expectations()}),
                         source=f"{view.task_id}:{parts['cell'].id}")
    catalog = tuple(build_catalog(view.lab.contracts, list(view.lab.capabilities)))
    return LabPipelineContext.from_parts(
        parts,
        seams=LabSeams(parts["trace"], session, operator, parts["wave"].hang_bound_s),
        catalog=catalog,
    )


def _usage(trace: TraceWriter) -> ProviderUsage:
    """Provider usage as the gateway recorded it; a figure any call left unknown stays
    unknown for the run (never 0)."""
    calls = [e for e in trace.events() if e.kind == "model_call"]

    def total(name: str) -> int | str:
        values = [getattr(e.data, name) for e in calls]
        return "unknown" if any(v is None for v in values) else sum(values)

    costs = [e.data.cost_usd for e in calls]
    cost: float | str = "unknown" if any(c is None for c in costs) else float(sum(costs))
    return ProviderUsage.model_validate({
        "source": "gateway", "model_calls": len(calls),
        "prompt_tokens": total("prompt_tokens"), "completion_tokens": total("completion_tokens"),
        "cost_usd": cost,
    })


def finish_lab(ctx: LabPipelineContext, scenario: Scenario, error: str | None,
               model: str, fixture: bool) -> LabRun:
    """End the cell's lab run: judge it with the whole scenario, write ``run.json`` into
    the cell's directory (beside events.jsonl, never merged into it) and hand the gate's
    coverage check of the fault to the operator for its landing probe."""
    ctx.seams.release()
    stopped: BaseException | None = None
    if error is not None and ctx.seams.deadline is None:
        stopped = (AgentStopped("deadline_exceeded", error) if error.startswith("Timeout")
                   else RuntimeError(error))
    record = ctx.seams.session.finish(
        AgentInfo(name=f"{ctx.cell.framework}-{ctx.cell.config}:{model}", kind="framework",
                  fixture=fixture),
        output=ctx.artifact or "",
        error=stopped,
        agent_ms=(time.perf_counter() - ctx.started) * 1000,
        usage=lambda: _usage(ctx.trace),
        judged_as=scenario,
    )
    write_run(record, ctx.run_dir)
    op = ctx.seams.operator
    if op is not None:
        op.record_check(next((c for c in record.gate.coverage if c.id == op.entry.id), None))
    return record


def lab_pass(record: LabRun, artifact: str | None) -> tuple[bool, str]:
    """T6's pass criterion (RECOVERED, and a baseline's pass): the lab rules hold over the
    committed history, execution completed, and the pipeline emitted its report."""
    if artifact is None:
        return False, "no report was emitted"
    if record.execution.status != "completed":
        return False, f"the lab run did not complete ({record.execution.status})"
    broken = [v.rule for v in record.gate.violations]
    if broken:
        return False, "lab rules broken: " + ", ".join(broken)
    return True, ""


def arm_lab_operator(cell: Cell, private: PrivateSpec) -> LabFault | None:
    """The cell's lab operator armed from its fault entry (None for a baseline)."""
    if cell.operator is None:
        return None
    spec = private.operator(cell.operator)
    assert isinstance(spec, LabOperatorSpec), f"{cell.operator} is not a lab operator"
    return arm_lab(cell.operator, spec.fault)


@dataclass
class LabTaskWorld(BaseWorld[LabFault, LabPipelineContext]):
    """The world of a lab task (T6) for one attempt: one lab session behind the lab's
    tools, judged by the lab's rules over the committed history (task_world.py for the
    protocol). The expected counts stay here, on the harness side, until ``finish``."""

    _scenario: Scenario | None = field(default=None, init=False)
    _record: LabRun | None = field(default=None, init=False)

    def _arm(self) -> LabFault | None:
        return arm_lab_operator(self.cell, self.private)

    def _build(self, attempt: Attempt) -> LabPipelineContext:
        self._scenario = lab_scenario(self.cell, self.view, self.private)
        return lab_pipeline_context(
            scenario=self._scenario, operator=self.operator,
            **run_parts(self.cell, self.wave, self.view, attempt),
        )

    def finish(self, error: str | None, model: ModelSpec) -> str | None:
        """Judge the lab run with the whole scenario and write ``run.json``. A held call that
        ran into the cell's deadline is the measured outcome, never a run error (SPEC
        I131): whatever the pipeline raised as it was stopped is its end."""
        ctx = self._ctx
        assert ctx is not None and self._scenario is not None, "no context was built"
        self._record = finish_lab(ctx, self._scenario, error, model.given, model.is_sim)
        if ctx.seams.deadline is None:
            return error
        # The run's end as the harness closes it (run.py writes the one run_end last).
        ctx.trace.emit("run_end", "harness", status="deadline", detail=ctx.seams.deadline)
        return None

    def passed(self) -> tuple[bool, str]:
        assert self._ctx is not None and self._record is not None, "the run is not finished"
        return lab_pass(self._record, self._ctx.artifact)
