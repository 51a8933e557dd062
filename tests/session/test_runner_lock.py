"""Two holders of a cell's record lock never overlap (two xdist workers must not run the
same baseline at once): a portable file lock (filelock), not POSIX ``fcntl``."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from pytest_sabot.core.trace_io import OutputUnwritable
from pytest_sabot.session import runner


def test_I41_a_second_holder_waits_until_the_first_has_left(tmp_path: Path) -> None:
    lock = tmp_path / "locks" / "cell.lock"
    events: list[str] = []
    entered = threading.Event()

    def first() -> None:
        with runner._locked(lock):
            events.append("first in")
            entered.set()
            time.sleep(0.3)
            events.append("first out")

    thread = threading.Thread(target=first)
    thread.start()
    entered.wait(5)
    with runner._locked(lock):
        events.append("second in")
    thread.join(5)
    assert events == ["first in", "first out", "second in"]
    assert "fcntl" not in vars(runner)


def test_a_lock_that_cannot_be_created_is_the_machines_fault(tmp_path: Path) -> None:
    blocker = tmp_path / "locks"
    blocker.write_text("a file where the locks directory should be")
    with pytest.raises(OutputUnwritable), runner._locked(blocker / "cell.lock"):
        pass
