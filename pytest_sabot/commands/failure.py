"""How a command gives up: one line on stderr naming the command, then its exit code."""

from __future__ import annotations

import sys

from pytest_sabot.core.exit_codes import EXIT_ERROR


def fail(prog: str, problem: object, code: int = EXIT_ERROR) -> int:
    """Print ``<prog>: <problem>`` to stderr; the exit code to return (error by default)."""
    print(f"{prog}: {problem}", file=sys.stderr)
    return code
