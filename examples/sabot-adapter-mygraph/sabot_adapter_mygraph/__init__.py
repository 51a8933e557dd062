"""The pytest-sabot adapter of mygraph: its declaration, read without importing LangGraph.

Registered in this distribution's pyproject.toml::

    [project.entry-points."pytest_sabot.adapters"]
    mygraph = "sabot_adapter_mygraph:adapter"

The pipeline (``pipeline.py``) is imported only when a mygraph cell runs.
"""

from __future__ import annotations

from pathlib import Path

from pytest_sabot.api import FrameworkAdapter

MAPPING = Path(__file__).with_name("mapping.yaml")


def adapter() -> FrameworkAdapter:
    """Everything pytest-sabot needs to know about mygraph."""
    return FrameworkAdapter(
        name="mygraph",
        run="sabot_adapter_mygraph.pipeline:run",
        packages={"langgraph": "1.2.9", "langchain-openai": "1.4.0"},
        modules=("langgraph", "langchain_openai", "mygraph"),
        install="sabot-adapter-mygraph",
        mapping=str(MAPPING),
        warning_modules=(r"langchain\w*(\..*)?", r"langgraph(\..*)?"),
        # one pass of a few tool calls, the checker, at most one revision
        cost_per_run={"default": (8, 2500, 400)},
    )
