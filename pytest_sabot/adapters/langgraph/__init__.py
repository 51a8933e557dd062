"""LangGraph (langgraph 1.2.9, langchain-openai 1.4.0): one ``StateGraph`` per run, with a
deterministic ``validate`` node and ``interrupt()`` in the guardrail configuration
(``pipeline.py``)."""

from __future__ import annotations

from pytest_sabot.core.frameworks import FrameworkAdapter


def adapter() -> FrameworkAdapter:
    """The LangGraph adapter, as its entry point registers it."""
    return FrameworkAdapter(
        name="langgraph",
        run="pytest_sabot.adapters.langgraph.pipeline:run",
        packages={"langgraph": "1.2.9", "langchain-openai": "1.4.0"},
        modules=("langgraph", "langchain_openai"),
        extra="langgraph",
        warning_modules=(r"langchain\w*(\..*)?", r"langgraph(\..*)?"),
        cost_per_run={"default": (8, 2500, 400), "guardrail": (9, 2500, 400)},
    )
