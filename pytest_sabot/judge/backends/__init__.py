"""Judge backends behind one small interface (``complete(prompt) -> raw text``), one
registry of them: the scheme of a judge spec names the factory, imported on first use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pytest_sabot.core.model_spec import ModelSpec
from pytest_sabot.core.registry import Registry

EXPECTED_SPECS = "'sim', 'claude-cli[:model]', 'openai:<model>' or 'none'"


class JudgeBackendError(Exception):
    """The judge could not answer (crash, timeout, refused, sandbox broken)."""


class JudgeBackend(Protocol):
    name: str  # e.g. "sim", "claude-cli", "openai:gpt-x"
    lineage: str  # model family, for the cross-lineage rule
    fixture: bool  # True for the embedded judge (its verdicts are fixtures)

    def complete(self, prompt: str) -> str: ...

    def assert_sandboxed(self) -> None: ...


JudgeFactory = Callable[[ModelSpec, "str | None"], JudgeBackend]
"""(the judge spec, the session's gateway URL or None) -> the backend."""

JUDGES: Registry[JudgeFactory] = Registry(
    "judge backend",
    {
        "sim": "pytest_sabot.judge.backends.sim:sim_judge",
        "claude-cli": "pytest_sabot.judge.backends.claude_cli:claude_cli_judge",
        "openai": "pytest_sabot.judge.backends.openai_judge:openai_judge",
    },
)
