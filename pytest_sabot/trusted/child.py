"""The child process: ``python -m pytest_sabot.trusted.child --in FD --out FD``.

Started only by :class:`pytest_sabot.trusted.supervisor.Supervisor`. It reads ``load``,
imports the target and the binding and answers ``loaded`` (or ``load_failed``), reads
``start``, builds the callable's context with the binding, runs the callable (awaiting it
when it is a coroutine) and reports ``finished`` or ``failed``. Then it exits at once,
whatever threads the callable left running. Its stdout and stderr are the supervisor's log file; the
protocol runs over the two inherited pipe descriptors only.

``sys.exit(n)`` inside the callable ends the process with ``n`` and no report; the parent
records that as an exit before returning.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import os
import sys
import traceback
from collections.abc import Awaitable, Sequence
from typing import Any, NoReturn

from pytest_sabot.trusted.channel import ChildChannel
from pytest_sabot.trusted.context import Bound
from pytest_sabot.trusted.protocol import (
    PROTOCOL_VERSION,
    Failed,
    Finished,
    Load,
    Loaded,
    LoadFailed,
    ProtocolError,
    Start,
)
from pytest_sabot.trusted.target import load_target

EXIT_PROTOCOL = 70


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _await(result: Awaitable[Any]) -> Any:
    async def wait() -> Any:
        return await result

    return asyncio.run(wait())


def _load(channel: ChildChannel, load: Load) -> tuple[Any, Any] | None:
    if load.protocol != PROTOCOL_VERSION:
        channel.send(LoadFailed(target=load.target, error_type="ProtocolError",
                                message=f"the child speaks protocol {PROTOCOL_VERSION}, "
                                f"the parent {load.protocol}"))
        return None
    try:
        fn = load_target(load.target)
        binding = load_target(load.binding)
    except BaseException as exc:  # an import may raise anything, SystemExit included
        traceback.print_exc()
        channel.send(LoadFailed(target=load.target, error_type=type(exc).__name__,
                                message=str(exc)))
        return None
    channel.send(Loaded(target=load.target, is_async=inspect.iscoroutinefunction(fn)))
    return fn, binding


def serve(channel: ChildChannel) -> int:
    """The whole child side of one supervised run; returns the exit code."""
    try:
        load = channel.receive()
        if not isinstance(load, Load):
            raise ProtocolError(f"expected load, got {load.type}")
        loaded = _load(channel, load)
        if loaded is None:
            return 0
        fn, binding = loaded
        start = channel.receive()
        if not isinstance(start, Start):
            raise ProtocolError(f"expected start, got {start.type}")
        bound: Bound = binding(start, channel)
    except (EOFError, ProtocolError) as exc:
        print(f"pytest_sabot.trusted.child: {exc}", file=sys.stderr)
        return EXIT_PROTOCOL
    try:
        result = fn(bound.context)
        if inspect.isawaitable(result):
            result = _await(result)
        output = bound.output(result)
    except SystemExit as exc:
        return _exit_code(exc)
    except BaseException as exc:
        text = traceback.format_exc()
        print(text, file=sys.stderr, end="")
        channel.send(Failed(error_type=type(exc).__name__, message=str(exc), traceback=text))
        return 0
    channel.send(Finished(output=output))
    return 0


def main(argv: Sequence[str] | None = None) -> NoReturn:
    parser = argparse.ArgumentParser(prog="python -m pytest_sabot.trusted.child")
    parser.add_argument("--in", dest="fd_in", type=int, required=True)
    parser.add_argument("--out", dest="fd_out", type=int, required=True)
    args = parser.parse_args(argv)
    channel = ChildChannel(open(args.fd_in, "rb"), open(args.fd_out, "wb"))  # noqa: SIM115
    try:
        code = serve(channel)
    except BrokenPipeError:  # the parent is gone: nobody to report to
        code = EXIT_PROTOCOL
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
