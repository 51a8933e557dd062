"""What a process that serves a pipeline outside the harness does to itself first.

A trusted agent's child process, or an MCP client, runs as the same user as the harness
process that serves it. Left alone, that user's processes can read the harness's
``/proc/<pid>/environ`` (the provider key), ``mem``, ``fd`` (the open live trace and the
log, whose paths name the cell), ``cwd`` and ``cmdline`` (``--sabot-out``, ``-k``, a
``--sabot-gateway-url`` with the session secret). Two steps close that to a process of the
same user that is not root:

* :func:`make_undumpable` sets ``PR_SET_DUMPABLE`` to 0 (``prctl(2)``): the kernel then
  makes ``/proc/<pid>/{environ,mem,fd,cwd,root,maps,...}`` root's and refuses ``ptrace``
  to anyone but root (a debugger or py-spy of the same user too);
* :func:`hide_command_line` overwrites the process's argument block, which the kernel
  serves as ``/proc/<pid>/cmdline`` to every user, undumpable or not.

Neither holds against root, which reads every process's memory; nothing here is a
sandbox (``pytest_sabot.trusted.sandbox`` is). Linux only; elsewhere both report False.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import sys
from pathlib import Path

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3
HIDDEN_COMMAND_LINE = "pytest-sabot (arguments hidden from the pipeline under test)"


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:
        return None


def make_undumpable() -> bool:
    """Make this process non-dumpable (idempotent); True when the kernel says it is."""
    libc = _libc()
    if libc is None:
        return False
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    return bool(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)


def is_dumpable() -> bool | None:
    """Whether this process is dumpable (None off Linux)."""
    libc = _libc()
    if libc is None:
        return None
    return bool(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))


def _argument_block() -> tuple[int, int] | None:
    """(start, end) of this process's argument block, from /proc/self/stat (fields 48
    and 49, arg_start and arg_end, after the parenthesised command name)."""
    try:
        stat = Path("/proc/self/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    try:  # fields[0] is field 3 (the state)
        return int(fields[48 - 3]), int(fields[49 - 3])
    except (IndexError, ValueError):
        return None


def hide_command_line(text: str = HIDDEN_COMMAND_LINE) -> bool:
    """Replace what ``/proc/<pid>/cmdline`` (and ``ps``) shows of this process by ``text``.

    The interpreter copied its arguments into ``sys.argv`` at start; the block the kernel
    serves is only read by the kernel, so it is overwritten in place (through
    ``/proc/self/mem``, which a process may always write for itself), text first, then
    NULs. True when ``/proc/self/cmdline`` reads back as ``text``."""
    block = _argument_block()
    if block is None:
        return False
    start, end = block
    size = end - start
    if size <= 1:
        return False
    data = text.encode("utf-8")[: size - 1]
    data += b"\0" * (size - len(data))
    with contextlib.suppress(OSError), open("/proc/self/mem", "r+b", buffering=0) as mem:
        mem.seek(start)
        mem.write(data)
    try:
        shown = Path("/proc/self/cmdline").read_bytes()
    except OSError:
        return False
    return shown.rstrip(b"\0") == data.rstrip(b"\0")


def harden() -> dict[str, bool]:
    """Both steps; what each achieved (for the record and the docs' claims). The command
    line goes first: once undumpable, a process that is not root may no longer open its
    own ``/proc/self/mem``."""
    hidden = hide_command_line()
    return {"undumpable": make_undumpable(), "command_line_hidden": hidden}
