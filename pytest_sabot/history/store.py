"""Opening the history: one SQLite file in WAL mode, checked, migrated, and every SQLite
error turned into a :class:`HistoryError` that names the file and says what to do.

* WAL mode: a reader (``sabot history``) never blocks the writer and never sees half a
  transaction; the writer never waits for readers.
* One writer at a time: every write is a ``BEGIN IMMEDIATE`` transaction, so a second
  writer waits for the first up to ``timeout`` seconds (SQLite's busy handler), then gets
  :class:`HistoryLocked`. Nothing is half written: a transaction that fails is rolled back.
* A file that is not a Sabot history (not SQLite, truncated, another program's database,
  damaged pages) is refused with :class:`HistoryCorrupt` before anything is written to it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_sabot import __version__
from pytest_sabot.core.records import now_iso
from pytest_sabot.history.errors import (
    HistoryCorrupt,
    HistoryError,
    HistoryLocked,
    HistoryNewer,
    rebuild_remedy,
)
from pytest_sabot.history.migrations import APPLICATION_ID, LATEST, MIGRATIONS

HISTORY_FILE = "history.sqlite"
HISTORY_ENV = "SABOT_HISTORY"
DEFAULT_TIMEOUT_S = 15.0

# SQLite's primary result codes (the low byte of an extended code).
_BUSY, _LOCKED, _IOERR, _CORRUPT, _CANTOPEN, _NOTADB = 5, 6, 10, 11, 14, 26


DEFAULT_OUTPUT_ROOT = Path("reports")
"""The output root of the working directory's project: where a wave writes by default
(``reports/wave-N``) and where ``sabot history`` reads (``reports/history.sqlite``)."""


def output_root_of(out_dir: Path) -> Path:
    """The output root a run written to ``out_dir`` belongs to: the directory holding it
    (``reports/wave-3`` -> ``reports``). An output directory made directly in the working
    directory (``--sabot-out=shard-2``) has no output root of its own: the working
    directory is the project, not a place for run files, so it belongs to the project's
    default output root, ``reports/``."""
    parent = out_dir.resolve().parent
    if parent == Path.cwd().resolve():
        return (Path.cwd() / DEFAULT_OUTPUT_ROOT).resolve()
    return parent


def default_history_path(out_dir: Path) -> Path:
    """Where a session writing to ``out_dir`` records itself: ``history.sqlite`` in its
    output root (:func:`output_root_of`: ``reports/wave-3`` -> ``reports/history.sqlite``;
    ``shard-2`` -> ``reports/history.sqlite`` too), never the working directory itself."""
    return output_root_of(out_dir) / HISTORY_FILE


def history_for_tree(top: Path) -> Path:
    """The history a tree indexes into when none is named: the output root's. A run
    directory (it holds sessions/, results.json or run.json) belongs to its output root
    (:func:`output_root_of`); any other directory is a root itself, except the working
    directory, whose history is the default one (``reports/history.sqlite``)."""
    if is_run_dir(top):
        return default_history_path(top)
    if top.resolve() == Path.cwd().resolve():
        return (Path.cwd() / DEFAULT_OUTPUT_ROOT / HISTORY_FILE).resolve()
    return top.resolve() / HISTORY_FILE


def is_run_dir(path: Path) -> bool:
    return (
        (path / "sessions").is_dir()
        or (path / "results.json").is_file()
        or (path / "run.json").is_file()
        or any(path.glob("run.prev-*.json"))
    )


def chosen_history(explicit: str | Path | None) -> Path:
    """The history a command reads: ``--history``, else ``$SABOT_HISTORY``, else
    ``reports/history.sqlite`` under the current directory."""
    if explicit:
        return Path(explicit)
    env = os.environ.get(HISTORY_ENV)
    if env:
        return Path(env)
    return DEFAULT_OUTPUT_ROOT / HISTORY_FILE


def _code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def translate(exc: sqlite3.Error, path: Path, timeout: float) -> HistoryError:
    """The HistoryError a failed SQLite call means, naming the file and what to do."""
    code = _code(exc)
    text = str(exc)
    if code in (_BUSY, _LOCKED) or "locked" in text:
        return HistoryLocked(
            path,
            f"another process is writing the history and held its lock longer than "
            f"{timeout:g} s ({text})",
            "Wait for it to finish (a session ending, or an index being built) and try "
            "again; nothing was written to the history and no run's own files were touched",
        )
    damaged = "malformed" in text or "not a database" in text
    if code in (_CORRUPT, _NOTADB) or (isinstance(exc, sqlite3.DatabaseError) and damaged):
        return HistoryCorrupt(
            path, f"is not a readable Sabot history ({text})", rebuild_remedy(path)
        )
    if code == _CANTOPEN:
        return HistoryError(
            path,
            f"cannot be opened ({text})",
            "Check that its directory exists and can be written (SQLite keeps -wal and "
            "-shm files beside it), or name another file with --history",
        )
    if code == _IOERR:
        return HistoryError(
            path, f"could not be read or written ({text})",
            "Check the disk (space, permissions); the run's own files are not affected",
        )
    return HistoryError(path, f"SQLite error: {text}", rebuild_remedy(path))


class History:
    """An open history: the connection and the file it belongs to."""

    def __init__(self, conn: sqlite3.Connection, path: Path, timeout: float) -> None:
        self.conn = conn
        self.path = path
        self.timeout = timeout

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (``BEGIN IMMEDIATE``): a second writer
        waits for it, then fails cleanly; on any error nothing of it is kept."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def one(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.conn.execute(sql, params).fetchone()
        return row

    def all(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        return list(self.conn.execute(sql, params).fetchall())

    @property
    def version(self) -> int:
        return _version(self.conn)

    @property
    def journal_mode(self) -> str:
        return str(self.conn.execute("PRAGMA journal_mode").fetchone()[0])


def _tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {str(r[0]) for r in rows}


def _version(conn: sqlite3.Connection) -> int:
    if "schema_version" not in _tables(conn):
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def _check(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse what is not a sound Sabot history, reading only."""
    app = int(conn.execute("PRAGMA application_id").fetchone()[0])
    tables = _tables(conn)
    if tables and app != APPLICATION_ID:
        raise HistoryCorrupt(
            path,
            f"is an SQLite database of another program (application_id {app}, tables "
            f"{', '.join(sorted(tables))}), not a Sabot history",
            "Name another file with --history (or $SABOT_HISTORY); this one was left as it was",
        )
    problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
    if problems != ["ok"]:
        raise HistoryCorrupt(
            path, f"is damaged (SQLite quick_check: {problems[0]})", rebuild_remedy(path)
        )


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    found = _version(conn)
    if found > LATEST:
        raise HistoryNewer(
            path,
            f"was written by a newer pytest-sabot (history schema version {found}; this "
            f"one reads up to {LATEST})",
            "Upgrade pytest-sabot, or name another file with --history",
        )
    if found == LATEST:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = _version(conn)  # another process may have migrated meanwhile
        if found == 0:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        for version in sorted(v for v in MIGRATIONS if v > found):
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_version (version, applied_at, tool) VALUES (?, ?, ?)",
                (version, now_iso(), f"pytest-sabot {__version__}"),
            )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _connect(path: Path, timeout: float, create: bool) -> sqlite3.Connection:
    if path.is_dir():
        raise HistoryError(path, "is a directory, not a history file",
                           f"Name the file itself, e.g. {path / HISTORY_FILE}")
    if not path.exists():
        if not create:
            raise HistoryError(
                path,
                "no history here yet",
                "To build it from the records already on disk run `sabot history "
                f"--history {path} index {path.parent}`",
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HistoryError(path, f"its directory cannot be created ({exc})") from None
    conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


@contextmanager
def open_history(
    path: Path, *, timeout: float = DEFAULT_TIMEOUT_S, create: bool = False
) -> Iterator[History]:
    """Open (with ``create``: create) the history at ``path``: check it, switch it to WAL
    mode, apply missing migrations. Every SQLite error inside the block becomes a
    HistoryError naming the file."""
    path = Path(path)
    conn = _connect(path, timeout, create)
    try:
        try:
            _check(conn, path)
            mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
            if mode != "wal":
                raise HistoryError(
                    path,
                    f"SQLite could not switch it to WAL mode (journal mode {mode!r}); a "
                    "history on a network file system is not supported",
                    "Keep the history on a local disk (--history)",
                )
            conn.execute("PRAGMA foreign_keys = ON")
            _migrate(conn, path)
            yield History(conn, path, timeout)
        except sqlite3.Error as exc:
            raise translate(exc, path, timeout) from None
    finally:
        conn.close()


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "HISTORY_ENV",
    "HISTORY_FILE",
    "History",
    "chosen_history",
    "default_history_path",
    "history_for_tree",
    "is_run_dir",
    "open_history",
    "translate",
]
