"""SIGTERM on the controller ends the session the way Ctrl-C does: pytest stops, the
workers are stopped, the session is recorded as interrupted and its results say they are
incomplete.

When a SIGTERM takes effect depends on what the session is doing (SPEC I109):

* before the handler is installed (the interpreter starting, the plugin configuring) the
  default applies: the process ends at once, having written nothing;
* while cells run, it is a KeyboardInterrupt, as Ctrl-C is;
* while the session opens its output (the reserve, the manifest, the first results.json:
  :func:`deferred`) it waits until that is done, then interrupts, so an output is never
  left half opened;
* once the session has begun writing its results (:func:`hold`) it ends nothing early: the
  results, JUnit XML and the summary are written and the process exits with the session's
  status. A second Ctrl-C while results are written still ends the process.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Literal

Mode = Literal["interrupt", "defer"]
_mode: Mode = "interrupt"
_pending = False


def _on_term(signum: int, frame: FrameType | None) -> None:
    global _pending
    if _mode == "defer":
        _pending = True
        return
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def install() -> Callable[[], None]:
    """Handle SIGTERM as KeyboardInterrupt; returns a function restoring the old handler."""
    global _mode, _pending
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    _mode, _pending = "interrupt", False
    previous: Any = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _on_term)

    def restore() -> None:
        global _mode, _pending
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
        _mode, _pending = "interrupt", False

    return restore


@contextmanager
def deferred() -> Iterator[None]:
    """A SIGTERM arriving inside the block interrupts when the block has ended."""
    global _mode, _pending
    before = _mode
    _mode = "defer"
    try:
        yield
    finally:
        _mode = before
        if before == "interrupt" and _pending:
            _pending = False
            raise KeyboardInterrupt("signal SIGTERM")


def hold() -> None:
    """From now on a SIGTERM ends nothing early (the session is writing its results)."""
    global _mode
    _mode = "defer"


def received() -> bool:
    """Whether a SIGTERM arrived while it was held or deferred."""
    return _pending
