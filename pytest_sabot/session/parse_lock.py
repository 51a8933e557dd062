"""One ``ast.parse`` at a time in a process that runs cells in threads.

CPython before 3.11.8 keeps the depth of its syntax-tree constructor in state every thread
shares (CPython gh-106905). The constructor runs no Python code of its own, but an
allocation inside it can start a garbage collection, whose finalizers and callbacks are
Python code: the thread can hand the interpreter over there, and another thread's
``ast.parse`` then upsets the first one's count, which fails with "SystemError: AST
constructor recursion depth mismatch" on a tree it built correctly. Cells parse at run
time, whatever their framework's warmth: ``inspect.signature`` of a builtin (CrewAI's
tools, every run), LangGraph building a graph, ``ast.literal_eval`` (the AutoGen adapter's
ledger), a traceback's caret lines on 3.11.

:func:`serialise_parses` puts one lock around ``ast.parse`` (``literal_eval``,
``inspect`` and ``traceback`` call it through the module): the parses of the threads take
turns, and nothing else about them changes (the same tree, the same errors).
"""

from __future__ import annotations

import ast
import functools
import threading
from typing import Any

_LOCK = threading.RLock()  # re-entrant: a collection inside a parse may parse again
_MARK = "_sabot_one_at_a_time"


def serialise_parses() -> None:
    """Make every later ``ast.parse`` of this process hold one lock (once; idempotent)."""
    original = ast.parse
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def parse(*args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            return original(*args, **kwargs)

    setattr(parse, _MARK, True)
    setattr(ast, "parse", parse)  # noqa: B010  # the module's attribute is what callers read


def parses_serialised() -> bool:
    """Whether this process's ``ast.parse`` holds the lock."""
    return bool(getattr(ast.parse, _MARK, False))
