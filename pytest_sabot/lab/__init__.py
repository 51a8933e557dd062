"""The fault lab: agents that change business state through tools, under transactional faults.

A simulated helpdesk (customers, tickets with entity versions, assignees, an approval
rule, a notification outbox) lives in the harness process. An agent reaches it only
through routed tool calls; faults O7..O11 act at the transaction boundary; four evidence
streams (requests, deliveries, effects, observations) are kept apart; completion and
safety rules judge the whole committed history; the gate says pass, fail, error or
inconclusive. See docs/LAB.md.

This package is the engine; its command line, demo, MCP server and text rendering are
``pytest_sabot.commands.lab`` and ``pytest_sabot.report.lab``. Callers import from the
modules, each with one job:

* ``lab.scenario`` / ``lab.scenario_load``: the scenario format, ``load_scenario(path)``,
  ``resolve_scenario(name)``, ``shipped_scenarios()``;
* ``lab.task`` / ``lab.task_load``: the lab task T6 in a matrix;
* ``lab.engine``: ``agent_view(scenario)``, ``run_scenario(scenario, agent, out_dir)``
  and ``LabSession`` (one run driven from outside);
* ``lab.gate``: ``evaluate(record) -> Gate`` (pure); ``lab.record``: the run record,
  ``read_run``, ``write_run``; ``lab.replay``: ``replay_run(record)``;
* ``lab.controllers``: ``CONTROLLERS`` / ``resolve_agent(name)``, the scripted
  acceptance fixtures; ``lab.trusted``: a user's callable in a supervised child process.

Importing this package imports none of them. The names an agent of your own is written
against (docs/TRUSTED_AGENTS.md) are read from it on first use: ``AgentContext``
(``call_tool(name, arguments) -> Observation``, ``sleep(ms)``), ``AgentResult``,
``AgentView``, ``LabAgent``, ``Observation``, ``ToolError`` and the exceptions a run
raises (``AgentStopped``, ``HarnessFailure``, ``LimitReached``, ``RunClosed``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from pytest_sabot.lab.observation import Observation, ToolError

_AGENT_FACE = {
    **dict.fromkeys(
        ("AgentContext", "AgentResult", "AgentStopped", "AgentView", "HarnessFailure",
         "LabAgent", "LimitReached", "RunClosed"), "pytest_sabot.lab.agent"),
    **dict.fromkeys(("Observation", "ToolError"), "pytest_sabot.lab.observation"),
}

__all__ = [
    "AgentContext",
    "AgentResult",
    "AgentStopped",
    "AgentView",
    "HarnessFailure",
    "LabAgent",
    "LimitReached",
    "Observation",
    "RunClosed",
    "ToolError",
]


def __getattr__(name: str) -> Any:
    """An agent-interface name, imported from its module on first use."""
    module = _AGENT_FACE.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_sabot.lab' has no attribute {name!r} (import "
                             "it from its module, e.g. pytest_sabot.lab.engine)")
    return getattr(importlib.import_module(module), name)
