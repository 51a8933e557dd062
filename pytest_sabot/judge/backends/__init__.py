"""Judge backends behind one small interface: ``complete(prompt) -> raw text``."""

from __future__ import annotations

from typing import Protocol


class JudgeBackendError(Exception):
    """The judge could not answer (crash, timeout, refused, sandbox broken)."""


class JudgeBackend(Protocol):
    name: str  # e.g. "sim", "claude-cli", "openai:gpt-x"
    lineage: str  # model family, for the cross-lineage rule
    fixture: bool  # True for the embedded judge (its verdicts are fixtures)

    def complete(self, prompt: str) -> str: ...

    def assert_sandboxed(self) -> None: ...
