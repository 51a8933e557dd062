"""Keeping CrewAI (1.15.5) inside one run's directory and off the network.

What the installed source does on its own, and what this module sets against it:

* Telemetry: an OpenTelemetry exporter to CrewAI's collector, off when any of
  ``OTEL_SDK_DISABLED``, ``CREWAI_DISABLE_TELEMETRY`` or ``CREWAI_DISABLE_TRACKING`` is
  ``true`` (read at start-up and again before every span).
* Tracing: the trace-batch uploader runs when ``CREWAI_TRACING_ENABLED`` is true or the user
  data file records consent; ``CREWAI_TRACING_ENABLED=false`` plus an empty data directory
  keeps it off, and every crew is also built with ``tracing=False``.
* First-run prompt: an interactive "enable tracing?" question, skipped when
  ``CREWAI_TESTING=true``.
* Version check: a PyPI lookup printed by the console formatter in verbose mode, skipped
  when ``CREWAI_DISABLE_VERSION_CHECK=true`` (agents here are never verbose anyway).
* Files: importing crewai creates ``~/.config/crewai`` (a write test file),
  ``~/.local/share/crewai/credentials/secret.key`` and an app-data directory named after
  the working directory; every crew then writes ``latest_kickoff_task_outputs.db`` there
  and takes portalocker lock files in ``tempfile.gettempdir()``. The app-data path is
  ``appdirs.user_data_dir(CREWAI_STORAGE_DIR or cwd name)``, resolved on every call.

So, for the length of a run (and for the import, which happens inside the first run):
``HOME``, the XDG directories and ``CREWAI_STORAGE_DIR`` point into
``<run_dir>/crewai_state`` and ``tempfile.tempdir`` points at its ``tmp``; the switches
above are set; everything is restored afterwards. The only host a run talks to is the
gateway on 127.0.0.1, through the base URL the harness gives each agent.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LOCK_WAIT_S",
    "STATE_DIR",
    "SWITCHES",
    "ImportCost",
    "import_cost",
    "isolated",
    "load_crewai",
]

STATE_DIR = "crewai_state"

# Environment switches CrewAI 1.15.5 reads (see the module docstring for each one's job).
SWITCHES: dict[str, str] = {
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "CREWAI_TESTING": "true",
    "CREWAI_DISABLE_VERSION_CHECK": "true",
}

_PATH_VARS = (
    "HOME",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "CREWAI_STORAGE_DIR",
    "TMPDIR",
)

_lock = threading.RLock()
LOCK_WAIT_S = 120.0


@dataclass(frozen=True)
class ImportCost:
    """How long the one-time ``import crewai`` of this process took."""

    seconds: float
    imported_here: bool  # False when crewai was already imported before the first run


_cost: ImportCost | None = None


def _state_dirs(run_dir: Path) -> dict[str, Path]:
    root = run_dir.resolve() / STATE_DIR
    dirs = {
        "HOME": root / "home",
        "XDG_DATA_HOME": root / "data",
        "XDG_CONFIG_HOME": root / "config",
        "XDG_CACHE_HOME": root / "cache",
        "XDG_STATE_HOME": root / "state",
        "CREWAI_STORAGE_DIR": root / "storage",
        "TMPDIR": root / "tmp",
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    return dirs


@contextmanager
def isolated(run_dir: Path) -> Iterator[Path]:
    """Point every CrewAI write into ``run_dir/crewai_state`` for the block; yields that dir.

    Process-wide (environment and ``tempfile.tempdir``), so runs in one process must not
    overlap; the lock makes an overlapping run wait instead of mixing directories. A run
    still holding it after ``LOCK_WAIT_S`` (one the harness abandoned on a timeout and that
    never ended) makes the waiting run fail with a clear error rather than hang.
    """
    if not _lock.acquire(timeout=LOCK_WAIT_S):
        raise RuntimeError(
            f"an earlier CrewAI run in this process did not end within {LOCK_WAIT_S:.0f}s"
        )
    try:
        dirs = _state_dirs(run_dir)
        names = (*SWITCHES, *_PATH_VARS)
        saved_env = {name: os.environ.get(name) for name in names}
        saved_tempdir = tempfile.tempdir
        try:
            os.environ.update(SWITCHES)
            for name, path in dirs.items():
                os.environ[name] = str(path)
            tempfile.tempdir = str(dirs["TMPDIR"])
            yield run_dir.resolve() / STATE_DIR
        finally:
            tempfile.tempdir = saved_tempdir
            for name, value in saved_env.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    finally:
        _lock.release()


def load_crewai() -> None:
    """Import crewai now (call inside :func:`isolated`) and remember what it cost."""
    global _cost
    if _cost is not None:
        return
    already = "crewai" in sys.modules
    started = time.perf_counter()
    importlib.import_module("crewai")
    importlib.import_module("crewai.tasks.llm_guardrail")
    _cost = ImportCost(time.perf_counter() - started, imported_here=not already)


def import_cost() -> ImportCost | None:
    """The import cost measured by :func:`load_crewai`, or None before the first run."""
    return _cost
