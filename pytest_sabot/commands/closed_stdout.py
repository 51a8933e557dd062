"""A reader that closes the ``sabot`` command's output early (``sabot validate | head -1``)
costs the command nothing: what is still written goes nowhere, the command runs to its end
and exits with its own code, and no "Broken pipe" text is printed."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, TextIO


class ClosedPipeSafe:
    """A text stream that, once its reader has gone, discards what is written to it.

    On the first ``BrokenPipeError`` the stream's file descriptor is pointed at the null
    device, so the bytes still buffered (and every later write, including the flush at
    interpreter exit) go there instead of raising."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._discard()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._discard()

    def _discard(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)
        with contextlib.suppress(OSError):
            self._stream.flush()  # what was buffered goes to the null device now

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_stdout() -> None:
    """Make the process's standard output safe to close early (idempotent). Only a stream
    with a real file descriptor is wrapped: a captured one (pytest's capsys) is left as it is."""
    stream = sys.stdout
    if isinstance(stream, ClosedPipeSafe) or stream is None:
        return
    try:
        stream.fileno()
    except (OSError, ValueError, AttributeError):
        return
    sys.stdout = ClosedPipeSafe(stream)



def guard_if_program(argv: object) -> None:
    """A command's ``main`` called with no arguments runs as the program (a ``python -m``
    shim): its output is made safe to close early, as the ``sabot`` command's is."""
    if argv is None:
        guard_stdout()


def exit_now(code: int) -> None:
    """End the process with ``code`` once its output is flushed, without the interpreter's
    teardown (threads it would wait for, objects freed one by one)."""
    for stream in (sys.stdout, sys.stderr):
        # a reader that closed early, or a stream already closed: nothing left to write
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def end_if_reader_left(code: int) -> None:
    """A program whose MCP server was stopped by a signal ends now: the server's stdin
    reader still blocks in a thread the interpreter would wait for (its records are
    written by then)."""
    served = sys.modules.get("pytest_sabot.commands.mcp_stdio")
    if served is not None and getattr(served, "reader_left_behind", False):
        exit_now(code)
