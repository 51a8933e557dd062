"""``AgentContext`` and ``AgentResult`` under the import path some adapters use; they are
the fault lab's own (``pytest_sabot.lab.agent``), nothing else."""

from pytest_sabot.lab.agent import AgentContext, AgentResult

__all__ = ["AgentContext", "AgentResult"]
