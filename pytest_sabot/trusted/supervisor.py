"""The parent's side: start a user's callable in a child process and serve it.

The supervisor owns everything that matters: it answers every request with the parent's
own handlers (the world, the tools, the clock), enforces a real-time deadline, and writes
its own account of how the process ended (:class:`ProcessReport`). The child is given only
what the ``start`` message carries (see :mod:`pytest_sabot.trusted.protocol`).

* The child is ``python -m pytest_sabot.trusted.child`` in a new session (its own process
  group), with stdin from /dev/null, stdout and stderr on a pipe whose every byte the
  parent copies into the log file (the child never holds a descriptor that names a file of
  the run), a fresh empty working directory, an environment reduced to an allow-list (no
  keys, nothing of the harness), and the protocol on two inherited pipes.
* Loading comes first (:meth:`Supervisor.load`): the target is imported in the child, so a
  target that cannot be imported is reported before anything runs.
* At the deadline the process group gets SIGTERM; requests that still arrive are refused
  (reason ``deadline``) and recorded as late; after ``grace_s`` it gets SIGKILL. Whatever
  the child's processes left behind in its group is killed when it exits.
* When a handler refuses with ``final=True`` (the run itself is over: its budget or its
  own deadline is spent), every later request is refused the same way without reaching
  the handlers, and recorded as late; the child gets ``grace_s`` to return, then it is
  stopped the same way.
* A crash, ``sys.exit``, a signal or a non-zero exit is recorded with its status and the
  tail of the log; it is never mistaken for a return.

This isolates a trusted callable from the harness's state; without ``sandbox=`` it is not
a sandbox. The child runs with the user's permissions and can do anything the user can
(read the user's files, open connections). Run only code you trust, or give it the
sandbox (:mod:`pytest_sabot.trusted.sandbox`). POSIX only (process groups, inherited
descriptors).
"""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

import pytest_sabot
from pytest_sabot.trusted.channel import Refusal
from pytest_sabot.trusted.protocol import (
    MAX_LINE_BYTES,
    PLAIN_BINDING,
    Failed,
    Finished,
    Load,
    Loaded,
    LoadFailed,
    Message,
    ProtocolError,
    Refused,
    Sleep,
    Slept,
    Start,
    ToolCall,
    ToolResult,
    ToParent,
    decode_to_parent,
    encode,
)
from pytest_sabot.trusted.report import LateRequest, ProcessEnd, ProcessReport
from pytest_sabot.trusted.target import is_target

if TYPE_CHECKING:
    from pytest_sabot.trusted.sandbox import Sandbox

CHILD_MODULE = "pytest_sabot.trusted.child"
BASE_ENV: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP",
    "TMP", "PYTHONPATH", "VIRTUAL_ENV", "SYSTEMROOT",
)
"""Variables a child inherits (plus LC_*); anything else only when named explicitly."""
LOG_TAIL_CHARS = 1500
MAX_LATE = 100
"""Late requests kept in the report (all are counted in ``late_total``)."""
_POLL_S = 0.02


class TargetError(Exception):
    """The target could not be started or loaded in the child (a user error)."""


class Handlers(Protocol):
    """What the parent does with the child's requests. Raise Refusal to refuse one."""

    def call_tool(self, name: str, arguments: dict[str, Any] | Unreadable) -> Any: ...

    def sleep(self, ms: int) -> None: ...


@dataclass(frozen=True)
class Unreadable:
    """Arguments the child could not serialize; ``repr()`` is the child's own repr."""

    text: str

    def __repr__(self) -> str:
        return self.text


@dataclass
class Outcome:
    """How one supervised run ended: the parent's report and the child's, if it made one."""

    report: ProcessReport
    finished: Finished | None = None
    failed: Failed | None = None


class _Timeout:
    pass


class _Eof:
    pass


_TIMEOUT, _EOF = _Timeout(), _Eof()


def _installed_dirs() -> set[str]:
    """The interpreter's own package directories (the child finds these without help)."""
    found = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    with contextlib.suppress(AttributeError):  # some virtualenvs lack getsitepackages
        found.update(site.getsitepackages())
    return {str(Path(p).resolve()) for p in found}


def child_environment(pass_env: Sequence[str] = (),
                      source: Mapping[str, str] | None = None,
                      extra_path: Sequence[str] = ()) -> dict[str, str]:
    """The child's environment: the allow-list, LC_*, and the variables named in pass_env.

    When this package was imported from a source checkout, that directory comes first on
    PYTHONPATH, so the child runs the same protocol code as the parent; ``extra_path``
    (the parent's working directory, where the user's package is) comes last.
    """
    env = os.environ if source is None else source
    keep = {k: v for k, v in env.items() if k in BASE_ENV or k.startswith("LC_")}
    for name in pass_env:
        if name in env:
            keep[name] = env[name]
    home = str(Path(pytest_sabot.__file__).resolve().parents[1])
    # The child runs in a directory of its own: a relative entry means this directory's.
    paths = [os.path.abspath(p) for p in keep.get("PYTHONPATH", "").split(os.pathsep) if p]
    if home not in _installed_dirs():  # a source checkout: the child must find the same one
        paths = [home] + [p for p in paths if p != home]
    paths += [p for p in extra_path if p not in paths]
    if paths:
        keep["PYTHONPATH"] = os.pathsep.join(paths)
    keep["PYTHONUNBUFFERED"] = "1"
    return keep


def _status_text(code: int | None) -> tuple[int | None, str | None, str]:
    if code is None:
        return None, None, "an unknown status"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return None, name, f"signal {name}"
    return code, None, f"code {code}"


class Supervisor:
    """One child process running one target, served by the parent.

    Use as a context manager: ``load()``, then ``run(start, handlers)`` once; leaving the
    block stops the child if it still runs.
    """

    def __init__(
        self,
        target: str,
        *,
        log_path: Path,
        binding: str = PLAIN_BINDING,
        timeout_s: float,
        grace_s: float = 5.0,
        load_timeout_s: float = 120.0,
        pass_env: Sequence[str] = (),
        cwd: Path | None = None,
        python: str = sys.executable,
        sandbox: Sandbox | None = None,
    ) -> None:
        if not is_target(target):
            raise TargetError(f"expected 'package.module:callable', got {target!r}")
        if timeout_s <= 0 or grace_s < 0 or load_timeout_s <= 0:
            raise ValueError("timeouts must be positive")
        self.target = target
        self.binding = binding
        self.log_path = log_path
        self.timeout_s = timeout_s
        self.grace_s = grace_s
        self.load_timeout_s = load_timeout_s
        self.pass_env = tuple(pass_env)
        self.cwd = cwd
        self.python = python
        self.sandbox = sandbox
        self._own_cwd: Path | None = None  # the fresh directory made for the child
        self._copier: threading.Thread | None = None
        self.report: ProcessReport | None = None
        self.argv: list[str] = []
        self.env: dict[str, str] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._to_child = -1
        self._from_child = -1
        self._selector: selectors.BaseSelector | None = None
        self._buffer = b""
        self._eof = False
        self._served = 0
        self._late: list[LateRequest] = []
        self._late_total = 0

    # ----------------------------------------------------------------- lifecycle

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def load(self) -> Loaded:
        """Start the child and import the target (and the binding) there; TargetError when
        it cannot. The real-time deadline does not count the load."""
        self._spawn()
        until = time.monotonic() + self.load_timeout_s
        if not self._send(Load(target=self.target, binding=self.binding), until):
            return self._load_failed("the agent process ended before it could load")
        try:
            message = self._next(until)
        except ProtocolError as exc:
            return self._load_failed(f"the agent process sent garbage while loading: {exc}")
        if isinstance(message, Loaded):
            return message
        if isinstance(message, LoadFailed):
            return self._load_failed(f"cannot load {self.target}: {message.error_type}: "
                                     f"{message.message} (traceback in {self.log_path})",
                                     with_tail=False)
        if isinstance(message, _Timeout):
            return self._load_failed(f"{self.target} did not load within "
                                     f"{self.load_timeout_s:g} s")
        return self._load_failed("the agent process ended while loading")

    def run(self, start: Start, handlers: Handlers) -> Outcome:
        """Serve the child until it reports, exits, or the real-time deadline passes.

        A KeyboardInterrupt stops the child (recorded as ``cancelled``) and is raised again.
        """
        if self._proc is None or self.report is not None:
            raise RuntimeError("run() needs a loaded child and runs once")
        deadline = time.monotonic() + self.timeout_s
        try:
            return self._serve(start, handlers, deadline)
        except KeyboardInterrupt:
            self._kill_now("cancelled", "the supervisor was interrupted; the agent process "
                           "was stopped")
            raise

    def close(self) -> None:
        """Stop the child if it still runs and release every descriptor."""
        if self._proc is not None and self._proc.returncode is None:
            self._kill_group(signal.SIGKILL)
            self._reap(self.grace_s + 5)
        for fd in (self._to_child, self._from_child):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._to_child = self._from_child = -1
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        self._drain_output(self.grace_s)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._own_cwd is not None:
            shutil.rmtree(self._own_cwd, ignore_errors=True)  # the child's scratch, no record
            self._own_cwd = None

    # ----------------------------------------------------------------- serving

    def _serve(self, start: Start, handlers: Handlers, deadline: float) -> Outcome:
        self._send(start, deadline)
        final: Refused | None = None  # set once a handler refused with final=True
        while True:
            try:
                message = self._next(deadline)
            except ProtocolError as exc:
                self._kill_now("protocol_error", f"the agent process broke the protocol: {exc}")
                return Outcome(self._report_now())
            if isinstance(message, _Timeout):
                if final is not None:
                    return self._stop("stopped_after_end", final.message,
                                      f"the run ended ({final.message}); the agent process "
                                      f"did not return within {self.grace_s:g} s and was "
                                      "stopped")
                return self._stop("stopped_at_deadline", f"the real-time deadline of "
                                  f"{self.timeout_s:g} s passed; the run is over",
                                  f"the real-time deadline of {self.timeout_s:g} s passed; "
                                  "the agent process was stopped")
            if isinstance(message, _Eof):
                return self._after_exit(None)
            if isinstance(message, ToolCall | Sleep):
                if final is not None:  # the run is over: refused here, kept as late
                    self._add_late(message)
                    self._send(final.model_copy(update={"id": message.id}), deadline)
                    continue
                answer, ends_run = self._answer(message, handlers)
                if ends_run and isinstance(answer, Refused):
                    final = answer
                    deadline = min(deadline, time.monotonic() + self.grace_s)
                self._send(answer, deadline)
            elif isinstance(message, Finished | Failed):
                return self._after_exit(message)
            else:
                self._kill_now("protocol_error", f"unexpected {message.type} during the run")
                return Outcome(self._report_now())

    def _answer(self, request: ToolCall | Sleep, handlers: Handlers) -> tuple[Message, bool]:
        """The answer to one request, and whether it ended the run (a final refusal)."""
        self._served += 1
        try:
            if isinstance(request, Sleep):
                handlers.sleep(request.ms)
                return Slept(id=request.id), False
            arguments: dict[str, Any] | Unreadable = (
                request.arguments if request.arguments is not None
                else Unreadable(request.unreadable or "<no arguments>"))
            result = handlers.call_tool(request.name, arguments)
            return ToolResult(id=request.id, result=result), False
        except Refusal as refusal:
            return (Refused(id=request.id, reason=refusal.reason, message=refusal.message),
                    refusal.final)
        except Exception as exc:
            self._kill_now("harness_error", f"the supervisor failed serving request "
                           f"{request.id} ({request.type}): {type(exc).__name__}: {exc}")
            raise

    def _add_late(self, request: ToolCall | Sleep) -> None:
        self._late_total += 1
        if len(self._late) < MAX_LATE:
            self._late.append(_late(request))

    def _stop(self, ended: ProcessEnd, refusal: str, detail: str) -> Outcome:
        """SIGTERM the group, refuse (and keep) what still arrives, SIGKILL after the grace."""
        self._kill_group(signal.SIGTERM)
        until = time.monotonic() + self.grace_s
        while True:
            try:
                message = self._next(until)
            except ProtocolError:
                break
            if isinstance(message, _Timeout | _Eof):
                break
            if isinstance(message, ToolCall | Sleep):
                self._add_late(message)
                self._send(Refused(id=message.id, reason="deadline", message=refusal), until)
        if not self._wait_exit(max(0.0, until - time.monotonic())):
            self._kill_group(signal.SIGKILL)
        code = self._reap(self.grace_s + 5)
        self._set_report(ended, detail, code)
        return Outcome(self._report_now())

    def _after_exit(self, message: Finished | Failed | None) -> Outcome:
        exited = self._wait_exit(self.grace_s)
        if not exited:
            self._kill_group(signal.SIGKILL)
        code = self._reap(self.grace_s + 5)
        status = _status_text(code)[2]
        if message is not None and exited and code == 0:
            ended: ProcessEnd = "finished" if isinstance(message, Finished) else "failed"
            detail = ("returned" if isinstance(message, Finished)
                      else f"raised {message.error_type}: {message.message}")
            self._set_report(ended, detail, code)
            if isinstance(message, Finished):
                return Outcome(self._report_now(), finished=message)
            return Outcome(self._report_now(), failed=message)
        if message is not None:
            what = "returned" if isinstance(message, Finished) else "raised"
            detail = (f"the agent process {what} but then "
                      + (f"exited with {status}" if exited
                         else f"did not exit within {self.grace_s:g} s and was killed"))
        else:
            detail = f"the agent process exited with {status} before it returned"
        tail = self._log_tail()
        self._set_report("exited", detail + (f"; last output:\n{tail}" if tail else ""), code)
        return Outcome(self._report_now())

    # ----------------------------------------------------------------- process

    def _spawn(self) -> None:
        if os.name != "posix":
            raise TargetError("trusted agents need a POSIX system (process groups, pipes)")
        if self._proc is not None:
            raise RuntimeError("load() runs once")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("xb")  # a log is never overwritten
        child_in, self._to_child = os.pipe()
        self._from_child, child_out = os.pipe()
        output_read, output_write = os.pipe()
        self.argv = [self.python, "-m", CHILD_MODULE, "--in", str(child_in),
                     "--out", str(child_out)]
        # The user's package is imported "from the current directory": the parent's, put on
        # the child's path, since the child itself starts in a fresh empty one.
        self.env = child_environment(self.pass_env, extra_path=(os.getcwd(),))
        cwd = self.cwd
        if cwd is None:
            self._own_cwd = cwd = Path(tempfile.mkdtemp(prefix="sabot-agent-"))
        argv = self.argv
        if self.sandbox is not None:
            argv = self.sandbox.wrap(self.argv, self.env, cwd)
        try:
            self._proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=output_write,
                stderr=output_write, env=self.env, cwd=cwd,
                pass_fds=(child_in, child_out), start_new_session=True, close_fds=True,
            )
        except OSError as exc:
            os.close(output_read)
            raise TargetError(f"cannot start {argv[0]}: {exc.strerror}") from None
        finally:
            os.close(child_in)
            os.close(child_out)
            os.close(output_write)
        self._copier = threading.Thread(
            target=_copy_output, args=(output_read, self._log), name="sabot-agent-log",
            daemon=True,
        )
        self._copier.start()
        os.set_blocking(self._to_child, False)
        os.set_blocking(self._from_child, False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._from_child, selectors.EVENT_READ)

    def _load_failed(self, text: str, *, with_tail: bool = True) -> Loaded:
        if not self._wait_exit(self.grace_s):
            self._kill_group(signal.SIGKILL)
        code = self._reap(self.grace_s + 5)
        tail = self._log_tail() if with_tail else ""
        if code not in (0, None):
            text += f" (the process exited with {_status_text(code)[2]})"
        self.close()
        raise TargetError(text + (f"; last output:\n{tail}" if tail else ""))

    def _kill_group(self, sig: signal.Signals) -> None:
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)

    def _wait_exit(self, timeout: float) -> bool:
        """Wait for the child to exit without reaping it (its group id stays reserved)."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return True
        until = time.monotonic() + timeout
        while True:
            try:
                info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return True
            if info is not None:
                return True
            if time.monotonic() >= until:
                return False
            time.sleep(_POLL_S)

    def _reap(self, timeout: float) -> int | None:
        """Kill what the child left in its group, then collect its exit status."""
        proc = self._proc
        if proc is None:
            return None
        if proc.returncode is None and self._wait_exit(timeout):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # leftovers; the leader is a zombie
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def _kill_now(self, ended: ProcessEnd, detail: str) -> None:
        self._kill_group(signal.SIGKILL)
        code = self._reap(self.grace_s + 5)
        if self.report is None:
            self._set_report(ended, detail, code)

    def _set_report(self, ended: ProcessEnd, detail: str, code: int | None) -> None:
        exit_code, sig, _ = _status_text(code)
        self.report = ProcessReport(
            target=self.target, ended=ended, detail=detail, exit_code=exit_code, signal=sig,
            timeout_s=self.timeout_s, requests=self._served, late=list(self._late),
            late_total=self._late_total,
            log_file=self.log_path.name,
        )

    def _report_now(self) -> ProcessReport:
        assert self.report is not None
        return self.report

    def _drain_output(self, timeout: float) -> None:
        """Wait (up to ``timeout``) until the child's output is all in the log: the copier
        ends when the last holder of the pipe (the child, what it left running) is gone."""
        if self._copier is not None:
            self._copier.join(timeout)
            if not self._copier.is_alive():
                self._copier = None

    def _log_tail(self) -> str:
        self._drain_output(1.0)
        if self._log is not None:
            self._log.flush()
        try:
            data = self.log_path.read_bytes()[-LOG_TAIL_CHARS:]
        except OSError:
            return ""
        return data.decode("utf-8", "replace").strip()

    # ----------------------------------------------------------------- pipes

    def _send(self, message: Message, until: float) -> bool:
        """Write one message; False when the child is gone or stops reading until ``until``."""
        data = memoryview(encode(message))
        while data:
            try:
                written = os.write(self._to_child, data)
                data = data[written:]
            except BlockingIOError:
                remaining = until - time.monotonic()
                if remaining <= 0:
                    return False
                select.select([], [self._to_child], [], remaining)
            except (BrokenPipeError, OSError):
                return False
        return True

    def _next(self, until: float) -> ToParent | _Timeout | _Eof:
        """The child's next message, or _TIMEOUT at ``until``, or _EOF when it hung up."""
        assert self._selector is not None
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line, self._buffer = self._buffer[:newline + 1], self._buffer[newline + 1:]
                return decode_to_parent(line)
            if len(self._buffer) > MAX_LINE_BYTES:
                raise ProtocolError(f"a message longer than {MAX_LINE_BYTES} bytes")
            if self._eof:
                return _EOF
            remaining = until - time.monotonic()
            if remaining <= 0:
                return _TIMEOUT
            if not self._selector.select(remaining):
                continue
            try:
                chunk = os.read(self._from_child, 1 << 16)
            except BlockingIOError:
                continue
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True


def _copy_output(fd: int, log: IO[bytes]) -> None:
    """Copy the child's stdout and stderr into its log until the pipe's last writer is gone."""
    try:
        while chunk := os.read(fd, 1 << 16):
            try:
                log.write(chunk)
                log.flush()
            except (OSError, ValueError):  # the log was closed or the disk is full: keep
                continue                   # draining, so the child never blocks on a write
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


def _late(request: ToolCall | Sleep) -> LateRequest:
    if isinstance(request, Sleep):
        return LateRequest(kind="sleep", ms=request.ms)
    return LateRequest(kind="tool_call", tool=request.name, arguments=request.arguments)
