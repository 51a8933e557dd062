"""``sabot history`` and ``sabot regress``, and the history's recording of the runs the
``sabot`` commands make themselves (``sabot demo --out``, ``sabot lab run``).

    sabot history [list] [--limit N] [--json]     the runs, newest first
    sabot history show RUN [--json]               one run: its fields, rows and cells
    sabot history index DIR... [--json]           (re)build the history from the records
    sabot history resolve RUN                     the output directory of a run
    sabot regress A B [--json] [--min-paired N]   exit 1 when B regressed from A

The history read is ``--history``, else ``$SABOT_HISTORY``, else
``reports/history.sqlite``; ``index`` without ``--history`` writes to the output root's
history. The commands themselves are :mod:`pytest_sabot.history.commands`.
"""

from __future__ import annotations

import argparse
import os
from contextlib import AbstractContextManager
from pathlib import Path

from pytest_sabot.history import (
    HISTORY_ENV,
    chosen_history,
    default_history_path,
    record_session,
)
from pytest_sabot.history import commands as history_commands
from pytest_sabot.history.sources import LabRun, ResultsFile
from pytest_sabot.history.store import DEFAULT_TIMEOUT_S

OFF = "none"


def _wait(args: argparse.Namespace) -> float:
    wait = getattr(args, "wait", None)
    return DEFAULT_TIMEOUT_S if wait is None else float(wait)


def cmd_history(args: argparse.Namespace) -> int:
    """``sabot history [list|show|index|resolve]``; a bare ``sabot history`` lists."""
    what = getattr(args, "history_command", None) or "list"
    given = getattr(args, "history", None)
    wait = _wait(args)
    as_json = bool(getattr(args, "json", False))
    if what == "index":
        return history_commands.cmd_history_index(
            Path(given) if given else None, args.dirs, as_json=as_json, timeout=wait
        )
    history = chosen_history(given)
    if what == "show":
        return history_commands.cmd_history_show(history, args.run, as_json=as_json,
                                                 timeout=wait)
    if what == "resolve":
        return history_commands.cmd_history_resolve(history, args.run, timeout=wait)
    return history_commands.cmd_history_list(
        history, limit=getattr(args, "limit", None), as_json=as_json, timeout=wait
    )


def cmd_regress(args: argparse.Namespace) -> int:
    """``sabot regress A B``: 1 when a row of B dropped beyond its interval from A."""
    return history_commands.cmd_regress(
        chosen_history(getattr(args, "history", None)), args.a, args.b, as_json=args.json,
        resamples=args.resamples, seed=args.seed, min_paired=args.min_paired,
        timeout=_wait(args),
    )


# --------------------------------------------------------------------------- recording


def history_for(out_dir: Path, explicit: str | Path | None = None) -> Path | None:
    """Where a run written to ``out_dir`` is recorded: ``explicit`` (a --history option),
    else ``$SABOT_HISTORY``, else the output root's ``history.sqlite``; None when the
    choice is ``none``."""
    chosen = str(explicit) if explicit else os.environ.get(HISTORY_ENV) or ""
    if chosen.strip().lower() == OFF:
        return None
    return Path(chosen) if chosen else default_history_path(out_dir)


def record_results(
    out_dir: Path, results: ResultsFile | LabRun, explicit: str | Path | None = None
) -> str:
    """Record results a command wrote without a pytest session (the demo's, a lab run's)
    once they are on disk. Returns the line to print: where it was recorded, or why it was
    not (a locked or damaged history never costs the run its files)."""
    from pytest_sabot.core.errors import SabotDataError

    path = history_for(out_dir, explicit)
    if path is None:
        return ""
    later = (f"its files are intact, add it later with `sabot history --history {path} "
             f"index {out_dir}`")
    try:
        done = record_session(path, out_dir, results, None)
    except SabotDataError as exc:
        return f"history: {out_dir} is not recorded: {exc}; {later}"
    except Exception as exc:  # the history must never cost a run its files or its exit
        return f"history: {out_dir} is not recorded ({type(exc).__name__}: {exc}); {later}"
    return f"history: run {done.run_id} {done.action} in {path}"


def record_lab_run(out_dir: Path, record: LabRun) -> str:
    """The lab's after-run listener: a lab run is recorded like a session."""
    return record_results(out_dir, record)


def lab_runs_recorded() -> AbstractContextManager[None]:
    """Within the block, ``sabot lab run`` (and ``lab mcp``) record every run in the
    history."""
    from pytest_sabot.lab import commands as lab_commands

    return lab_commands.after_run(record_lab_run)


__all__ = [
    "cmd_history",
    "cmd_regress",
    "history_for",
    "lab_runs_recorded",
    "record_lab_run",
    "record_results",
]
