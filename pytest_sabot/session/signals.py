"""SIGTERM on the controller ends the session the way Ctrl-C does: pytest stops, the
workers are stopped, the session is recorded as interrupted and its results say they are
incomplete. A second signal while results are written still ends the process."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def install() -> Callable[[], None]:
    """Handle SIGTERM as KeyboardInterrupt; returns a function restoring the old handler."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous: Any = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _raise_interrupt)

    def restore() -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)

    return restore
