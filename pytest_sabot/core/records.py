"""Where records live in an output directory, what a cell's run leaves there, and how an
earlier record is set aside.

    <out>/cells/<cell id>/             the current record of a cell: events.jsonl (the
                                       trace), outcome.json (RunOutcome), workspace/, and
                                       crashed.json when its worker process died
    <out>/superseded/<cell id>~<n>/    earlier records, set aside (never deleted)
    <out>/sessions/<run id>.json       one manifest per session that ran cells
    <out>/locks/                       file locks: one per cell record, and the session's

A record is only ever added or moved: a session that runs a cell again first moves the
earlier record to ``superseded/`` with a note saying which session set it aside and why.

One session writes an output directory at a time: the session lock
(``locks/session.lock``, held by the session's controller from the moment it opens the
output until it ends; the operating system releases it when the process dies) refuses a
second session on the same output with a message naming the session that holds it
(SPEC I109).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from pytest_sabot.core.models.base import StrictModel
from pytest_sabot.core.trace_io import OutputUnwritable, write_json_atomic

if TYPE_CHECKING:
    from filelock import FileLock

CELLS_DIR = "cells"
OUTCOME_FILE = "outcome.json"
CRASH_FILE = "crashed.json"
SUPERSEDED_DIR = "superseded"
SESSIONS_DIR = "sessions"
LOCKS_DIR = "locks"
SET_ASIDE_FILE = "set-aside.json"
SESSION_LOCK = "session.lock"
SESSION_HOLDER = "session.json"


class SetAside(StrictModel):
    """superseded/<cell id>~<n>/set-aside.json: why an earlier record was moved."""

    cell_id: str
    reason: str = Field(description="Why the record was set aside, in words.")
    session: str = Field("", description="Run id of the session that set it aside.")
    at: str = Field(description="When (UTC, ISO 8601).")


class RunOutcome(StrictModel):
    """What the harness knows when a cell has run (outcome.json)."""

    cell_id: str
    attempts: int = Field(description="1, or 2 when the first attempt hit a run error.")
    error: str | None = Field(None, description="Run error text of the last attempt, if any.")
    passed: bool = Field(description="The task's pass criterion on the final artifact.")
    pass_reason: str = ""
    artifact: str | None = Field(None, description="The final artifact, FLAGS head stripped.")
    effects: dict[str, bool] = Field(default_factory=dict)
    session: str = Field("", description="Run id of the session that recorded this outcome.")
    model: str = Field("", description="Pipeline model spec the run was made with.")
    downgrade_model: str | None = Field(
        None, description="O4 downgrade model named for the run (fault runs of O4 only)."
    )
    registration_hash: str = Field(
        "", description="sha256 of the cells/tasks/mappings the run was made from."
    )
    rules: str = Field("", description="Rule version of the session that made the run.")
    stopped: Literal["budget"] | None = Field(
        None,
        description="'budget' when the spend cap refused a model call of the run: the run "
        "did not finish, is not a RUN_ERROR, and a resumed session runs it again.",
    )


class CrashNote(StrictModel):
    """crashed.json: the worker process running this cell died (written by the controller,
    read by the retry, kept with the crashed attempt's files)."""

    session: str = Field(description="Run id of the session whose worker crashed.")
    worker: str = Field(description="The worker that crashed, e.g. 'gw0'.")
    message: str = Field(description="What the controller saw.")
    at: str = Field(description="When (UTC, ISO 8601).")


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def cell_dir(out_dir: Path, cell_id: str) -> Path:
    return out_dir / CELLS_DIR / cell_id


def set_aside(out_dir: Path, cell_id: str, reason: str, session: str = "") -> Path:
    """Move a cell's record to ``superseded/<cell id>~<n>`` (n counts up; nothing is ever
    overwritten) and leave a note beside it. Returns where it went."""
    source = cell_dir(out_dir, cell_id)
    area = out_dir / SUPERSEDED_DIR
    try:
        area.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputUnwritable(area, exc) from exc
    n = 1
    while (area / f"{cell_id}~{n}").exists():
        n += 1
    target = area / f"{cell_id}~{n}"
    try:
        # A rename needs no new space, so a record can be set aside on a full disk too.
        os.rename(source, target)
    except OSError as exc:
        raise OutputUnwritable(target, exc) from exc
    note = SetAside(cell_id=cell_id, reason=reason, session=session, at=now_iso())
    write_json_atomic(target / SET_ASIDE_FILE, note.model_dump(mode="json"))
    return target


class OutputInUse(Exception):
    """Another session (or a command writing results) holds the output directory."""


class SessionHolder(StrictModel):
    """locks/session.json: who holds the session lock of an output directory."""

    holder: str = Field(description="Run id of the session, or the command, holding it.")
    pid: int
    host: str
    since: str = Field(description="When it took the lock (UTC, ISO 8601).")


class SessionLock:
    """The one writer of an output directory at a time (``locks/session.lock``)."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = Path(out_dir)
        self.path = self.out_dir / LOCKS_DIR / SESSION_LOCK
        self.holder_path = self.out_dir / LOCKS_DIR / SESSION_HOLDER
        self._lock: FileLock | None = None

    def acquire(self, holder: str) -> None:
        """Take the lock at once, or raise OutputInUse naming who holds it."""
        from filelock import FileLock, Timeout

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = FileLock(self.path, timeout=0)
            lock.acquire()
        except Timeout:
            raise OutputInUse(self._in_use()) from None
        except OSError as exc:
            raise OutputUnwritable(self.path, exc) from exc
        self._lock = lock
        note = SessionHolder(holder=holder, pid=os.getpid(), host=socket.gethostname(),
                             since=now_iso())
        try:
            write_json_atomic(self.holder_path, note.model_dump(mode="json"))
        except OutputUnwritable:
            self.release()
            raise

    def _in_use(self) -> str:
        who = "another session"
        try:
            note = SessionHolder.model_validate(json.loads(self.holder_path.read_text("utf-8")))
            who = (f"session {note.holder} (pid {note.pid} on {note.host}, since "
                   f"{note.since})")
        except (OSError, ValueError):
            pass
        return (
            f"the output is being written by {who}: two sessions never write one output at "
            "once (their records and verdicts would cross). Wait for it to end (a pytest "
            "session can be given another --sabot-out instead)"
        )

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    @property
    def held(self) -> bool:
        return self._lock is not None
