"""A capture of one named logger's records for one run, in the thread the run's event loop
runs in (the Magentic-One adapters read the orchestrator's log lines this way)."""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from types import TracebackType
from typing import ClassVar, Self


class Loudness:
    """How loud one logger is while captures of it are active, counted across threads.

    The first capture to enter lets the logger's DEBUG records through and keeps them from
    handlers further up (they are for the captures only, not for a console handler some
    framework installed); the last one to exit restores the level and propagation it had.
    With ``pin_children``, existing child loggers that inherit their level are pinned to
    the level they had, so only the logger itself gets louder.
    """

    def __init__(self, name: str, *, pin_children: bool = False) -> None:
        self.name = name
        self.pin_children = pin_children
        self._lock = threading.Lock()
        self._active = 0
        self._levels: dict[str, int] = {}
        self._propagate = True

    def louder(self) -> None:
        with self._lock:
            if self._active == 0:
                logger = logging.getLogger(self.name)
                self._levels = {self.name: logger.level}
                if self.pin_children:
                    self._pin_children(logger.getEffectiveLevel())
                logger.setLevel(logging.DEBUG)
                self._propagate = logger.propagate
                logger.propagate = False
            self._active += 1

    def quieter(self) -> None:
        with self._lock:
            self._active -= 1
            if self._active == 0:
                for name, level in self._levels.items():
                    logging.getLogger(name).setLevel(level)
                self._levels = {}
                logging.getLogger(self.name).propagate = self._propagate

    def _pin_children(self, inherited: int) -> None:
        prefix = self.name + "."
        for name, child in list(logging.root.manager.loggerDict.items()):
            if (
                name.startswith(prefix)
                and isinstance(child, logging.Logger)
                and child.level == logging.NOTSET
            ):
                self._levels[name] = logging.NOTSET
                child.setLevel(inherited)


class _Handler(logging.Handler):
    def __init__(self, owner: ThreadLogCapture) -> None:
        super().__init__(level=logging.DEBUG)
        self._owner = owner

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self._owner.thread:
            self._owner.take(record)


class ThreadLogCapture(ABC):
    """Use it as a context manager inside the run's event-loop thread: only records logged
    by the thread that entered it reach :meth:`receive`, so runs in other threads of the
    same process never bleed in. While it is active its logger is made loud enough
    (:attr:`loudness`, shared by every capture of that logger). An exception raised by
    :meth:`receive` is kept, later records are no longer received, and it is raised again
    when the block exits: the logging machinery never swallows it."""

    loudness: ClassVar[Loudness]
    """The logger whose handlers get the capture's handler, and how it is made loud."""

    def __init__(self) -> None:
        self.thread: int | None = None
        self._handler = _Handler(self)
        self._error: BaseException | None = None

    @abstractmethod
    def receive(self, record: logging.LogRecord) -> None:
        """One record of the logger (or a child's), logged by the capture's thread."""

    def take(self, record: logging.LogRecord) -> None:
        if self._error is not None:
            return
        try:
            self.receive(record)
        except Exception as exc:  # raised again on exit
            self._error = exc

    def __enter__(self) -> Self:
        self.thread = threading.get_ident()
        self.loudness.louder()
        logging.getLogger(self.loudness.name).addHandler(self._handler)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        logging.getLogger(self.loudness.name).removeHandler(self._handler)
        self.loudness.quieter()
        if exc is None and self._error is not None:
            raise self._error
