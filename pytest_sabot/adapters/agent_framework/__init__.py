"""Microsoft agent-framework (agent-framework-core 1.23.0, agent-framework-openai 1.17.0,
agent-framework-orchestrations 1.4.0), a candidate row: a worker/reviewer workflow by
default, its Magentic orchestration in the guardrail configuration (``pipeline.py``,
``_magentic.py``). An optional extra: the meta-package pulls mcp 2.x, which does not
install beside crewai's mcp pin."""

from __future__ import annotations

from pytest_sabot.core.frameworks import FrameworkAdapter


def adapter() -> FrameworkAdapter:
    """The agent-framework adapter, as its entry point registers it."""
    return FrameworkAdapter(
        name="agent_framework",
        run="pytest_sabot.adapters.agent_framework.pipeline:run",
        packages={
            "agent-framework-core": "1.23.0",
            "agent-framework-openai": "1.17.0",
            "agent-framework-orchestrations": "1.4.0",
        },
        modules=("agent_framework", "agent_framework_openai", "agent_framework_orchestrations"),
        extra="agent-framework",
        # The same shapes as LangGraph's graph and AutoGen's Magentic ledgers.
        cost_per_run={"default": (8, 2600, 400), "guardrail": (16, 4000, 350)},
        flags_head_configs=frozenset({"guardrail"}),
    )
