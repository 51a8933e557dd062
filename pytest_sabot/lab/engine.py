"""Running one scenario with one agent: ``run_scenario(scenario, agent, out_dir) -> LabRun``.

The engine builds the world from the scenario, gives the agent only its public view,
routes every call through the boundary, classifies how execution ended, closes the world
(a late call writes nothing), evaluates the gate and writes ``run.json`` atomically.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_sabot.lab.agent import AgentContext, AgentResult, AgentView, LabAgent
from pytest_sabot.lab.boundary import Boundary
from pytest_sabot.lab.catalog import build_catalog
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

UsageSource = Callable[[], ProviderUsage]
# Stands in for the gate only while the draft record is evaluated; never written.
_UNEVALUATED = Gate(outcome="error", exit_code=2, reasons=["not evaluated"],
                    completion_judged=False)


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
        return Execution(status=boundary.limit, detail=f"stopped at {boundary.now_ms} ms after "
                         f"{len(boundary.recorder.requests)} routed calls", output=output,
                         refused=refused)
    if isinstance(error, KeyboardInterrupt):
        return Execution(status="cancelled", detail="interrupted", output=output)
    if error is not None:
        return Execution(status="agent_error", detail=f"{type(error).__name__}: {error}",
                         output=output)
    return Execution(status="completed", output=output)


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
    started = datetime.now(UTC).isoformat(timespec="milliseconds")
    t0 = time.perf_counter()
    world = World(scenario)
    initial = world.current
    recorder = Recorder()
    boundary = Boundary(scenario, world, recorder)
    view = agent_view(scenario)
    context = AgentContext(view, boundary.call_tool, boundary.sleep)
    output, error = "", None
    t_agent = time.perf_counter()
    try:
        output = _run_agent(agent, context)
    except (Exception, KeyboardInterrupt) as exc:  # classified by _execution
        error = exc
    agent_ms = (time.perf_counter() - t_agent) * 1000
    boundary.close()
    provider = usage() if usage is not None else ProviderUsage()
    streams = recorder.streams()
    draft = LabRun(
        run_id=f"{scenario.name}--{agent.name.replace(':', '-')}--s{scenario.world.seed}",
        scenario=scenario,
        scenario_source=source,
        scenario_digest=scenario_digest(scenario),
        agent=AgentInfo(name=agent.name, kind=agent.kind, fixture=agent.fixture),
        agent_view=view,
        world_initial=initial,
        world_final=world.current,
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
        timings=Timings(started_at=started, real_ms=0.0, agent_real_ms=agent_ms),
    )
    record = draft.model_copy(update={
        "gate": evaluate(draft),
        "timings": Timings(started_at=started, real_ms=(time.perf_counter() - t0) * 1000,
                           agent_real_ms=agent_ms),
    })
    return record, error if isinstance(error, KeyboardInterrupt) else None
