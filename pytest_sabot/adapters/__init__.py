"""Framework adapters: one module per framework, each exposing ``run(ctx: RunContext)``.

The registry maps a framework name to the module that builds its pipeline. A module is
imported only when its framework is asked for, so importing pytest_sabot never pulls in
LangGraph, CrewAI, AutoGen or agent-framework (each takes seconds to import).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable
from typing import cast

from pytest_sabot.core.context import RunContext

AdapterRun = Callable[[RunContext], None]

ADAPTERS: dict[str, str] = {
    "langgraph": "pytest_sabot.adapters.langgraph_pipeline",
    "crewai": "pytest_sabot.adapters.crewai_pipeline",
    "autogen": "pytest_sabot.adapters.autogen_pipeline",
    # A candidate row (not part of the standard's waves); needs the agent-framework extra.
    "agent_framework": "pytest_sabot.adapters.agent_framework_pipeline",
}
# The top-level modules each framework's pipeline imports, and the extra that installs them
# when they are not dependencies of pytest-sabot itself.
REQUIRES: dict[str, tuple[str, ...]] = {
    "langgraph": ("langgraph", "langchain_openai"),
    "crewai": ("crewai",),
    "autogen": ("autogen_agentchat", "autogen_core", "autogen_ext"),
    "agent_framework": (
        "agent_framework",
        "agent_framework_openai",
        "agent_framework_orchestrations",
    ),
}
EXTRAS: dict[str, str] = {"agent_framework": "agent-framework"}

__all__ = [
    "ADAPTERS",
    "EXTRAS",
    "REQUIRES",
    "AdapterRun",
    "FrameworkNotInstalled",
    "get_adapter",
    "missing_framework",
    "require_frameworks",
]


class FrameworkNotInstalled(RuntimeError):
    """A framework's packages are not installed; the message says how to install them."""


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_framework(framework: str) -> str | None:
    """None when ``framework``'s packages can be imported, else what is missing and how to
    install it (without importing anything)."""
    absent = [m for m in REQUIRES.get(framework, ()) if not _importable(m)]
    if not absent:
        return None
    extra = EXTRAS.get(framework)
    how = (
        f"install the '{extra}' extra: pip install 'pytest-sabot[{extra}]'"
        if extra
        else "install pytest-sabot with its dependencies: pip install pytest-sabot"
    )
    return (
        f"the {framework} pipeline needs {', '.join(absent)}, which "
        f"{'is' if len(absent) == 1 else 'are'} not installed; {how}"
    )


def require_frameworks(frameworks: Iterable[str]) -> None:
    """Raise FrameworkNotInstalled for the first framework whose packages are missing."""
    for framework in sorted(set(frameworks)):
        message = missing_framework(framework)
        if message is not None:
            raise FrameworkNotInstalled(message)


def get_adapter(framework: str) -> AdapterRun:
    """The ``run(ctx)`` callable of a framework's pipeline, importing its module now."""
    try:
        module_path = ADAPTERS[framework]
    except KeyError:
        known = ", ".join(sorted(ADAPTERS))
        raise ValueError(f"field 'framework': expected one of {known}, got {framework!r}") from None
    require_frameworks([framework])
    module = importlib.import_module(module_path)
    return cast(AdapterRun, module.run)
