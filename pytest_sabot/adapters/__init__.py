"""Framework adapters: one module per framework, each exposing ``run(ctx: RunContext)``.

The registry maps a framework name to the module that builds its pipeline. A module is
imported only when its framework is asked for, so importing pytest_sabot never pulls in
LangGraph, CrewAI or AutoGen (each takes seconds to import).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import cast

from pytest_sabot.harness.context import RunContext

AdapterRun = Callable[[RunContext], None]

ADAPTERS: dict[str, str] = {
    "langgraph": "pytest_sabot.adapters.langgraph_pipeline",
    "crewai": "pytest_sabot.adapters.crewai_pipeline",
    "autogen": "pytest_sabot.adapters.autogen_pipeline",
    # A candidate row (not part of the standard's waves); needs the agent-framework extra.
    "agent_framework": "pytest_sabot.adapters.agent_framework_pipeline",
}

__all__ = ["ADAPTERS", "AdapterRun", "get_adapter"]


def get_adapter(framework: str) -> AdapterRun:
    """The ``run(ctx)`` callable of a framework's pipeline, importing its module now."""
    try:
        module_path = ADAPTERS[framework]
    except KeyError:
        known = ", ".join(sorted(ADAPTERS))
        raise ValueError(f"field 'framework': expected one of {known}, got {framework!r}") from None
    module = importlib.import_module(module_path)
    return cast(AdapterRun, module.run)
