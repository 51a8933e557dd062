"""A session's connection budget shared by its gateways: a counting semaphore across
processes, made of N slot files in a directory of the session's own.

The gateways of one pytest session (the controller's and every xdist worker's, all on this
machine) together hold at most N upstream calls, and any one of them may hold all N while
the others are idle. A slot is held with ``fcntl.flock(LOCK_EX | LOCK_NB)`` on an open file
description of its own: two threads of one process holding two descriptors of one file
exclude each other as two processes do, and the kernel frees the slots of a process that
dies, however it dies (kill -9 included). A caller that finds every slot taken waits: for a
slot freed in its own process it is woken at once, for one freed elsewhere it looks again
after a short poll that backs off.

The directory is made by the session's controller (``make_slots_dir``: mode 0700, a random
name under the temporary directory, never in the environment nor under the output), and
removed when the session ends. Where ``fcntl`` is missing (or the directory is not there,
a worker on another machine) :func:`usable` is False and the session falls back to a fixed
share of the connections per gateway."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not on this platform's CI
    fcntl = None  # type: ignore[assignment]

# The first wait after every slot was found taken, and the longest (it doubles between).
POLL_FIRST_S = 0.002
POLL_MAX_S = 0.02
SLOTS_PREFIX = "sabot-slots-"


def slot_name(index: int) -> str:
    return f"slot-{index:04d}"


def make_slots_dir(count: int, parent: Path | None = None) -> Path:
    """A new directory of ``count`` slot files (mode 0700, a random name)."""
    directory = Path(tempfile.mkdtemp(prefix=SLOTS_PREFIX, dir=parent))
    os.chmod(directory, 0o700)
    for index in range(max(1, count)):
        fd = os.open(directory / slot_name(index), os.O_RDWR | os.O_CREAT, 0o600)
        os.close(fd)
    return directory


def remove_slots_dir(directory: Path) -> None:
    """Remove a directory made by :func:`make_slots_dir` (nothing recorded is in it)."""
    if directory.name.startswith(SLOTS_PREFIX):
        shutil.rmtree(directory, ignore_errors=True)


def usable(directory: Path | None) -> bool:
    """Whether this process can share the budget through ``directory``."""
    return fcntl is not None and directory is not None and directory.is_dir()


class SharedSlots:
    """``count`` slots shared by every process that opens the same directory.

    Each process opens every slot file once (its own open file descriptions, closed on
    exec); a thread takes one the process does not hold with a non-blocking flock."""

    def __init__(self, directory: Path, count: int) -> None:
        if fcntl is None:
            raise OSError("fcntl.flock is not available on this platform")
        self.directory = directory
        self.count = max(1, count)
        self._fds = [
            os.open(directory / slot_name(i), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            for i in range(self.count)
        ]
        self._held: set[int] = set()  # slots this process holds
        self._cond = threading.Condition()
        self._next = 0  # where the next search starts (spreads the slots tried)
        self._closed = False

    def acquire(self, timeout: float | None = None) -> int | None:
        """Take a slot; its index, or None when none came free within ``timeout`` seconds
        (None: wait as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        poll = POLL_FIRST_S
        with self._cond:
            while True:
                index = self._try_take()
                if index is not None:
                    return index
                wait = poll
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    wait = min(wait, left)
                self._cond.wait(wait)
                poll = min(POLL_MAX_S, poll * 2)

    def release(self, index: int) -> None:
        with self._cond:
            if index not in self._held:
                return
            self._held.discard(index)
            if not self._closed:
                assert fcntl is not None
                fcntl.flock(self._fds[index], fcntl.LOCK_UN)
            self._cond.notify()

    def idle(self) -> int:
        """How many slots no process holds now (each is taken and given back at once)."""
        assert fcntl is not None
        free = 0
        with self._cond:
            if self._closed:
                return 0
            for index, fd in enumerate(self._fds):
                if index in self._held:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                fcntl.flock(fd, fcntl.LOCK_UN)
                free += 1
        return free

    @property
    def held(self) -> int:
        """How many slots this process holds."""
        with self._cond:
            return len(self._held)

    def close(self) -> None:
        """Close the slot files (the kernel frees the slots they held)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            for fd in self._fds:
                os.close(fd)
            self._held.clear()
            self._cond.notify_all()

    def _try_take(self) -> int | None:
        assert fcntl is not None
        if self._closed:
            raise OSError("the shared connection slots are closed")
        for step in range(self.count):
            index = (self._next + step) % self.count
            if index in self._held:
                continue
            try:
                fcntl.flock(self._fds[index], fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            self._held.add(index)
            self._next = (index + 1) % self.count
            return index
        return None
