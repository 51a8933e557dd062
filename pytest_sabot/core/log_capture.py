"""A capture of one named logger's records for one run, in the thread the run's event loop
runs in (the Magentic-One adapters read the orchestrator's log lines this way)."""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from types import TracebackType
from typing import ClassVar, Self


class _Handler(logging.Handler):
    def __init__(self, owner: ThreadLogCapture) -> None:
        super().__init__(level=logging.DEBUG)
        self._owner = owner

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self._owner.thread:
            self._owner.receive(record)


class ThreadLogCapture(ABC):
    """Use it as a context manager inside the run's event-loop thread: only records logged
    by the thread that entered it reach :meth:`receive`, so runs in other threads of the
    same process never bleed in. While it is active its logger is made loud enough
    (:meth:`_louder`), and made quiet again (:meth:`_quieter`) when it exits; a subclass
    counts its captures so the last one to exit restores the logger."""

    logger_name: ClassVar[str]
    """The logger whose handlers get the capture's handler."""

    def __init__(self) -> None:
        self.thread: int | None = None
        self._handler = _Handler(self)

    @abstractmethod
    def receive(self, record: logging.LogRecord) -> None:
        """One record of the logger (or a child's), logged by the capture's thread."""

    @abstractmethod
    def _louder(self) -> None: ...

    @abstractmethod
    def _quieter(self) -> None: ...

    def __enter__(self) -> Self:
        self.thread = threading.get_ident()
        self._louder()
        logging.getLogger(self.logger_name).addHandler(self._handler)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        logging.getLogger(self.logger_name).removeHandler(self._handler)
        self._quieter()
