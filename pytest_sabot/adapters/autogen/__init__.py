"""AutoGen (autogen-agentchat, autogen-core, autogen-ext 0.7.5): a worker/critic
``RoundRobinGroupChat`` by default, Magentic-One in the guardrail configuration, read
through the framework's own trace logger (``pipeline.py``, ``_logging.py``)."""

from __future__ import annotations

from pytest_sabot.core.frameworks import FrameworkAdapter


def adapter() -> FrameworkAdapter:
    """The AutoGen adapter, as its entry point registers it."""
    return FrameworkAdapter(
        name="autogen",
        run="pytest_sabot.adapters.autogen.pipeline:run",
        packages={"autogen-agentchat": "0.7.5", "autogen-core": "0.7.5", "autogen-ext": "0.7.5"},
        modules=("autogen_agentchat", "autogen_core", "autogen_ext"),
        extra="autogen",
        warning_modules=(r"autogen_\w+(\..*)?",),
        # Magentic-One's ledgers make the guardrail configuration the heaviest.
        cost_per_run={"default": (8, 2600, 400), "guardrail": (16, 4000, 350)},
        flags_head_configs=frozenset({"guardrail"}),
    )
