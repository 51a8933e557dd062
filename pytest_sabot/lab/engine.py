"""Running one scenario with one agent: ``run_scenario(scenario, agent, out_dir) -> LabRun``.

The engine builds the world from the scenario, gives the agent only its public view,
routes every call through the boundary, classifies how execution ended, closes the world
(a late call writes nothing), evaluates the gate and writes ``run.json`` atomically.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_sabot.core.exit_codes import GATE_EXIT
from pytest_sabot.lab.agent import AgentContext, AgentResult, AgentStopped, AgentView, LabAgent
from pytest_sabot.lab.boundary import Boundary
from pytest_sabot.lab.catalog import build_catalog
from pytest_sabot.lab.faults.base import FaultCoverage
from pytest_sabot.lab.gate import evaluate
from pytest_sabot.lab.record import (
    AgentInfo,
    Execution,
    Gate,
    LabRun,
    Measurement,
    ProviderUsage,
    RefusedAction,
    Timings,
    write_run,
)
from pytest_sabot.lab.recorder import Recorder
from pytest_sabot.lab.scenario import Scenario
from pytest_sabot.lab.scenario_load import scenario_digest
from pytest_sabot.lab.world.store import World
from pytest_sabot.trusted.report import ProcessReport

UsageSource = Callable[[], ProviderUsage]
# Stands in for the gate only while the draft record is evaluated; never written.
_UNEVALUATED = Gate(outcome="error", exit_code=GATE_EXIT["error"],
                    reasons=["not evaluated"], completion_judged=False)


def agent_view(scenario: Scenario) -> AgentView:
    """What an agent receives for this scenario: public task, capabilities, catalog."""
    tools = list(scenario.task.capabilities)
    return AgentView(task=scenario.task.public(), capabilities=tools,
                     catalog=build_catalog(scenario.contracts, tools))


def _output(result: Any) -> str:
    if isinstance(result, AgentResult):
        return result.output
    return "" if result is None else str(result)


def _run_agent(agent: LabAgent, context: AgentContext) -> str:
    result: Any = agent.run(context)
    if inspect.isawaitable(result):
        pending = result

        async def _wait() -> Any:
            return await pending

        result = asyncio.run(_wait())
    return _output(result)


def _execution(boundary: Boundary, output: str, error: BaseException | None) -> Execution:
    refused = None
    if boundary.refused is not None:
        r = boundary.refused
        refused = RefusedAction(kind=r.kind, tool=r.tool, arguments=r.arguments, ms=r.ms)
    if boundary.failure is not None:
        return Execution(status="harness_error", detail=boundary.failure, output=output)
    if boundary.limit is not None:
        detail = (f"stopped at {boundary.now_ms} ms after "
                  f"{len(boundary.recorder.requests)} routed calls")
        if boundary.held is not None:
            held = boundary.held
            detail += f"; {held.request_id} ({held.tool}) was held unanswered"
        return Execution(status=boundary.limit, detail=detail, output=output,
                         refused=refused)
    if isinstance(error, KeyboardInterrupt):
        return Execution(status="cancelled", detail="interrupted", output=output)
    if isinstance(error, AgentStopped):
        return Execution(status=error.status, detail=error.detail, output=output)
    if error is not None:
        return Execution(status="agent_error", detail=f"{type(error).__name__}: {error}",
                         output=output)
    return Execution(status="completed", output=output)


def _run_id(scenario: Scenario, agent_name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", agent_name).strip("-") or "agent"
    return f"{scenario.name}--{name}--s{scenario.world.seed}"


class LabSession:
    """One run in progress: the world, the boundary and the recorder, driven from outside.

    ``execute`` drives a session with an agent callable; the MCP server drives one with a
    client's requests. ``context`` is the only door to the world; ``finish`` closes the
    world (a late call writes nothing), evaluates the gate and returns the record.
    """

    def __init__(self, scenario: Scenario, *, source: str | None = None) -> None:
        self.scenario = scenario
        self.source = source
        self.started = datetime.now(UTC).isoformat(timespec="milliseconds")
        self._t0 = time.perf_counter()
        self.world = World(scenario)
        self.initial = self.world.current
        self.recorder = Recorder()
        self.boundary = Boundary(scenario, self.world, self.recorder)
        self.view = agent_view(scenario)
        self.context = AgentContext(self.view, self.boundary.call_tool, self.boundary.sleep)

    @property
    def closed(self) -> bool:
        return self.boundary.closed

    def coverage(self) -> list[FaultCoverage]:
        """What became of each schedule entry so far (the record's ``coverage`` at the end)."""
        return self.boundary.schedule.coverage(dict(self.boundary.calls))

    def finish(
        self,
        agent: AgentInfo,
        *,
        output: str = "",
        error: BaseException | None = None,
        agent_ms: float = 0.0,
        usage: UsageSource | None = None,
        process: ProcessReport | None = None,
        judged_as: Scenario | None = None,
    ) -> LabRun:
        """End the run for good and return its evaluated record.

        ``judged_as`` is the scenario the record is written and judged with when the one
        the session ran with had private parts held back (a harness that keeps the
        expected counts away from the pipeline's side passes the whole scenario here).
        It must be the same scenario in everything but ``expect``.
        """
        scenario = self.scenario
        if judged_as is not None:
            if judged_as.model_copy(update={"expect": scenario.expect}) != scenario:
                raise ValueError("judged_as differs from the scenario the session ran "
                                 "in more than its expectations")
            scenario = judged_as
        boundary, recorder = self.boundary, self.recorder
        boundary.close()
        provider = usage() if usage is not None else ProviderUsage()
        streams = recorder.streams()
        draft = LabRun(
            run_id=_run_id(scenario, agent.name),
            scenario=scenario,
            scenario_source=self.source,
            scenario_digest=scenario_digest(scenario),
            agent=agent,
            agent_view=self.view,
            world_initial=self.initial,
            world_final=self.world.current,
            streams=streams,
            waits=list(recorder.waits),
            coverage=boundary.schedule.coverage(dict(boundary.calls)),
            execution=_execution(boundary, output, error),
            measurement=Measurement(
                routed_calls=len(streams.requests), deliveries=len(streams.deliveries),
                effects=len(streams.effects), waits=len(recorder.waits),
                virtual_ms=boundary.now_ms, provider_usage=provider,
            ),
            gate=_UNEVALUATED,
            timings=Timings(started_at=self.started, real_ms=0.0, agent_real_ms=agent_ms),
            process=process,
        )
        return draft.model_copy(update={
            "gate": evaluate(draft),
            "timings": Timings(started_at=self.started,
                               real_ms=(time.perf_counter() - self._t0) * 1000,
                               agent_real_ms=agent_ms),
        })


def run_scenario(
    scenario: Scenario,
    agent: LabAgent,
    out_dir: Path | None,
    *,
    source: str | None = None,
    usage: UsageSource | None = None,
) -> LabRun:
    """Run ``scenario`` with ``agent``; write ``out_dir/run.json`` unless out_dir is None.

    ``usage`` is called once after the agent loop to report observed provider usage (the
    model gateway, when there is one); without it usage stays 'unknown'. A
    KeyboardInterrupt is recorded as 'cancelled', written, then raised again.
    """
    record, interrupt = execute(scenario, agent, source=source, usage=usage)
    if out_dir is not None:
        write_run(record, out_dir)
    if interrupt is not None:
        raise interrupt
    return record


def execute(
    scenario: Scenario,
    agent: LabAgent,
    *,
    source: str | None = None,
    usage: UsageSource | None = None,
) -> tuple[LabRun, KeyboardInterrupt | None]:
    """One run in memory: the evaluated record, and the interrupt that cancelled it."""
    session = LabSession(scenario, source=source)
    output, error = "", None
    t_agent = time.perf_counter()
    try:
        output = _run_agent(agent, session.context)
    except (Exception, KeyboardInterrupt) as exc:  # classified by _execution
        error = exc
    agent_ms = (time.perf_counter() - t_agent) * 1000
    record = session.finish(
        AgentInfo(name=agent.name, kind=agent.kind, fixture=agent.fixture),
        output=output, error=error, agent_ms=agent_ms, usage=usage,
        process=agent.process() if agent.process is not None else None,
    )
    return record, error if isinstance(error, KeyboardInterrupt) else None
