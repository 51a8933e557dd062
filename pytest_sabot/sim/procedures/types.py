"""The records the per-task procedures take and return."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

GENERIC_PARAPHRASE = "part of the draft does not sit well with the inputs it was built from"


class ExchangeLike(Protocol):
    """A tool call the worker made and the observation it was shown (``result``)."""

    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> dict[str, Any]: ...

    @property
    def result(self) -> str: ...


@dataclass(frozen=True)
class ToolRequest:
    """The worker's next step is a call of ``tool`` with ``arguments``."""

    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class FinalAnswer:
    """The worker is done; ``text`` is its final reply (the draft artifact)."""

    text: str


@dataclass(frozen=True)
class Finding:
    """One anomaly a careful reviewer sees.

    ``summary`` is one sentence that quotes the conflicting values or names verbatim;
    ``quotes`` are those values or names; ``paraphrase`` names the kind of problem without
    repeating any value or name.
    """

    summary: str
    quotes: tuple[str, ...] = ()
    paraphrase: str = GENERIC_PARAPHRASE


Step = ToolRequest | FinalAnswer
