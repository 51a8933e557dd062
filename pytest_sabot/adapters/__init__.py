"""Framework adapters: one package per framework, each building the standard's pipeline
(load -> worker -> review -> revise/emit) with that framework's own parts.

An adapter package's top module is light: it holds ``adapter()``, which returns the
:class:`~pytest_sabot.core.frameworks.FrameworkAdapter` declaring everything about the
framework (packages and pins, the modules the pipeline imports and the extra that
installs them, warnings to quiet, the cost estimate per run, the mapping file, the
configurations that end in a FLAGS head line). Its ``pipeline`` module holds
``run(ctx: RunContext) -> None`` and is imported only when the framework's first cell
runs, so importing pytest_sabot never pulls in LangGraph, CrewAI, AutoGen or
agent-framework (each takes seconds to import).

An adapter sees only :mod:`pytest_sabot.core` (the run context protocol, the verdict token,
the prompt format): the harness, the gateway, the operators and the scorer are out of its
reach (the import-linter contracts in pyproject.toml). The shipped adapters register
through the ``pytest_sabot.adapters`` entry points, as a third party's would.
"""

from __future__ import annotations

from pytest_sabot.core.frameworks import (
    AdapterRun,
    FrameworkAdapter,
    FrameworkNotInstalled,
    adapter,
    framework_names,
    require_frameworks,
)

__all__ = [
    "AdapterRun",
    "FrameworkAdapter",
    "FrameworkNotInstalled",
    "framework_names",
    "get_adapter",
    "missing_framework",
    "require_frameworks",
]


def missing_framework(framework: str) -> str | None:
    """None when ``framework``'s packages can be imported, else what is missing and how to
    install it (without importing anything)."""
    return adapter(framework).missing()


def get_adapter(framework: str) -> AdapterRun:
    """The ``run(ctx)`` callable of a framework's pipeline, importing its module now."""
    return adapter(framework).load_run()
