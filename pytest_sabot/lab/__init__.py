"""The fault lab: agents that change business state through tools, under transactional faults.

A simulated helpdesk (customers, tickets with entity versions, assignees, an approval
rule, a notification outbox) lives in the harness process. An agent reaches it only
through routed tool calls; faults O7..O11 act at the transaction boundary; four evidence
streams (requests, deliveries, effects, observations) are kept apart; completion and
safety rules judge the whole committed history; the gate says pass, fail, error or
inconclusive. See docs/LAB.md.

The public interface (what a framework integration calls):

* ``load_scenario(path) -> Scenario`` and ``resolve_scenario(name)``;
* ``agent_view(scenario) -> AgentView``: what the agent is given;
* ``run_scenario(scenario, agent, out_dir) -> LabRun`` with a ``LabAgent`` whose callable
  takes an ``AgentContext`` (``call_tool(name, arguments) -> Observation``,
  ``sleep(ms)``);
* ``evaluate(record) -> Gate`` (pure), ``read_run(path)``, ``replay_run(record)``;
* ``CONTROLLERS`` / ``resolve_agent(name)``: the scripted acceptance fixtures;
* ``LabSession``: one run driven from outside (the MCP server, ``lab.mcp_server``);
  ``lab.trusted``: a user's callable run in a supervised child process.
"""

from __future__ import annotations

from pytest_sabot.lab.agent import (
    AgentContext,
    AgentResult,
    AgentStopped,
    AgentView,
    HarnessFailure,
    LabAgent,
    LimitReached,
    RunClosed,
)
from pytest_sabot.lab.catalog import ToolContract, build_catalog
from pytest_sabot.lab.controllers import CONTROLLERS, resolve_agent
from pytest_sabot.lab.engine import LabSession, agent_view, execute, run_scenario
from pytest_sabot.lab.gate import evaluate
from pytest_sabot.lab.observation import Observation, ToolError
from pytest_sabot.lab.record import Gate, LabRun, ProviderUsage, Violation, read_run, write_run
from pytest_sabot.lab.replay import ReplayReport, replay_run
from pytest_sabot.lab.scenario import PublicTask, Scenario
from pytest_sabot.lab.scenario_load import load_scenario, resolve_scenario, shipped_scenarios
from pytest_sabot.lab.vocabulary import EXIT_CODES

__all__ = [
    "CONTROLLERS",
    "EXIT_CODES",
    "AgentContext",
    "AgentResult",
    "AgentStopped",
    "AgentView",
    "Gate",
    "HarnessFailure",
    "LabAgent",
    "LabRun",
    "LabSession",
    "LimitReached",
    "Observation",
    "ProviderUsage",
    "PublicTask",
    "ReplayReport",
    "RunClosed",
    "Scenario",
    "ToolContract",
    "ToolError",
    "Violation",
    "agent_view",
    "build_catalog",
    "evaluate",
    "execute",
    "load_scenario",
    "read_run",
    "replay_run",
    "resolve_agent",
    "resolve_scenario",
    "run_scenario",
    "shipped_scenarios",
    "write_run",
]
