"""CrewAI (crewai 1.15.5): one one-agent crew per stage on CrewAI's native OpenAI provider,
with a contract guardrail and CrewAI's own ``LLMGuardrail`` in the guardrail configuration
(``pipeline.py``), kept inside its run's directory (``_env.py``)."""

from __future__ import annotations

from pytest_sabot.core.frameworks import FrameworkAdapter


def adapter() -> FrameworkAdapter:
    """The CrewAI adapter, as its entry point registers it."""
    return FrameworkAdapter(
        name="crewai",
        run="pytest_sabot.adapters.crewai.pipeline:run",
        packages={"crewai": "1.15.5"},
        modules=("crewai",),
        extra="crewai",
        # CrewAI brings OpenTelemetry, ChromaDB and LiteLLM along.
        warning_modules=(
            r"crewai(\..*)?",
            r"opentelemetry(\..*)?",
            r"chromadb(\..*)?",
            r"litellm(\..*)?",
        ),
        cost_per_run={"default": (9, 3000, 450), "guardrail": (13, 3000, 450)},
        # A run points the process's environment and tempdir into its own directory.
        one_run_at_a_time=True,
    )
