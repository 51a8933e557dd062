"""Errors of the run history: each names the history file, what is wrong and what to do.

They derive from :class:`~pytest_sabot.errors.SabotDataError`, so every ``sabot`` command
that already turns a data error into exit 2 and one line on stderr does the same for them.
"""

from __future__ import annotations

from pathlib import Path

from pytest_sabot.core.errors import SabotDataError


class HistoryError(SabotDataError):
    """The history cannot be used as asked; the message says why and what to do."""

    def __init__(self, path: str | Path, problem: str, remedy: str = "") -> None:
        # The message is built here rather than by SabotDataError's "expected ..." form:
        # a locked or damaged database has no field that was expected to hold a value.
        self.file = str(path)
        self.field = ""
        self.expected = remedy
        self.got = None
        self.problem = problem
        self.remedy = remedy
        text = f"{self.file}: {problem}"
        if remedy:
            text += f". {remedy}"
        Exception.__init__(self, text)


class HistoryLocked(HistoryError):
    """Another process held the history's write lock longer than this one would wait."""


class HistoryCorrupt(HistoryError):
    """The file is not a readable Sabot history (not SQLite, truncated, or another
    program's database)."""


class HistoryNewer(HistoryError):
    """The history was written by a newer pytest-sabot whose schema this one cannot read."""


class RunNotFound(HistoryError):
    """No run, or more than one, matches the id or prefix given."""


def rebuild_remedy(path: str | Path) -> str:
    """What to do with a history that cannot be read: it is only an index, so set it aside
    and build it again from the records on disk."""
    p = Path(path)
    return (
        f"The history is only an index of the records on disk: move it aside (mv {p} "
        f"{p}.broken, with its -wal and -shm files if present) and rebuild it with "
        f"`sabot history --history {p} index {p.parent}`; no run's own "
        "files were touched"
    )
