"""Writing the history: one session as it ends (:func:`record_session`), or every session
found under a directory (:func:`index_output`), idempotently.

Both read the records and write only the history file: an output directory is never
written to, so a history that is locked or damaged costs nothing but its own entry (the
run's files stay as they are, and ``index_output`` adds the entry later).

How an entry meets what the history already holds under its run id:

* nothing yet: it is added;
* the same content (the sha256 of its manifest and of its results.json or run.json): it
  is unchanged, and nothing is written;
* changed content from the same directory (a session's manifest rewritten when it ended,
  results.json rewritten by ``sabot rescore --write``): the changed part is updated; a
  manifest whose results.json a later session replaced leaves the verdicts the history
  recorded before as they are (verdicts are replaced only by other verdicts of the run);
* another directory: a copy (same content) is not indexed twice; a directory that was
  moved (the old one is gone) is followed; different content under the same run id is a
  conflict, reported and not indexed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.models.base import StrictModel
from pytest_sabot.core.records import now_iso
from pytest_sabot.core.secrets import scrub_value
from pytest_sabot.history.errors import HistoryError
from pytest_sabot.history.sources import (
    FALLBACK_FIELDS,
    SHARED_FIELDS,
    Entry,
    LabRun,
    ResultsFile,
    SessionRecord,
    lab_entry,
    lab_files,
    manifest_files,
    read_lab_run,
    read_manifest,
    read_results_file,
    results_file,
    session_entry,
)
from pytest_sabot.history.store import (
    DEFAULT_TIMEOUT_S,
    History,
    default_history_path,
    history_for_tree,
    is_run_dir,
    open_history,
)
from pytest_sabot.results import READINGS_DIR, RESULTS_FILE, SLICES_DIR

Action = Literal["added", "updated", "unchanged", "copy"]

# Directories of an output tree that hold no session records of their own.
SKIP_DIRS = frozenset(
    {"cells", "superseded", "locks", "judge-cache", "recordings", "sessions", "workspace",
     "report-cells"}
)
# Inside an output directory, a board kept apart (slices/, readings/: SPEC I97, I98) is
# indexed with its session's manifest in that directory, whose cell records it scores.
APART_DIRS = frozenset({SLICES_DIR, READINGS_DIR})

RUN_COLUMNS = frozenset({
    "started", "ended", "tool", "wave", "rules", "wave_rules", "model", "downgrade_model",
    "judge", "upstream", "fixture", "label", "registration_hash", "versions", "off_pin",
    "mode", "status", "detail", "selection", "selected", "recorded", "complete", "spend",
    "spent_usd", "unknown_cost_calls", "model_calls", "upstream_calls",
    "project_spent_usd", "ledger", "host", "pid",
})


class Recorded(StrictModel):
    """What recording one session did."""

    history: str = Field(description="The history file written.")
    run_id: str = Field(description="The run id the session is recorded under.")
    action: Action = Field(
        description="added, updated, unchanged, or copy (the same run is already indexed "
        "from another directory)."
    )
    detail: str = Field("", description="More words, e.g. where the indexed copy lives.")


class IndexProblem(StrictModel):
    """A record that could not be indexed, and why."""

    file: str = Field(description="The record (or directory) concerned.")
    problem: str = Field(description="What is wrong with it, in words.")


class IndexReport(StrictModel):
    """What ``index_output`` did (what ``history index --json`` prints)."""

    history: str = Field(description="The history file written.")
    scanned: list[str] = Field(description="Output directories found and read.")
    added: list[str] = Field(default_factory=list, description="Run ids added.")
    updated: list[str] = Field(default_factory=list, description="Run ids updated.")
    unchanged: list[str] = Field(default_factory=list, description="Run ids already current.")
    copies: list[str] = Field(
        default_factory=list, description="Run ids already indexed from another directory."
    )
    problems: list[IndexProblem] = Field(
        default_factory=list, description="Records left out, with the reason."
    )


# --------------------------------------------------------------------------- applying


def _insert(conn: Any, table: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    cols = list(rows[0])
    sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"
    conn.executemany(sql, [tuple(r[c] for c in cols) for r in rows])


def _replace_verdicts(conn: Any, entry: Entry) -> None:
    conn.execute("DELETE FROM cells WHERE run_id = ?", (entry.run_id,))
    conn.execute("DELETE FROM score_rows WHERE run_id = ?", (entry.run_id,))
    conn.execute("DELETE FROM snapshots WHERE run_id = ?", (entry.run_id,))
    _insert(conn, "cells", entry.cells or [])
    _insert(conn, "score_rows", entry.rows or [])
    if entry.snapshot is not None and entry.results_digest is not None:
        fmt, blob = entry.snapshot
        conn.execute(
            "INSERT INTO snapshots (run_id, format, digest, data) VALUES (?, ?, ?, ?)",
            (entry.run_id, fmt, entry.results_digest, blob),
        )


def _fields(entry: Entry, manifest_known: bool, results_known: bool) -> dict[str, Any]:
    """The run's columns this entry sets. The manifest governs the fields it shares with
    results.json (results.json fills them only for a run without a manifest); results.json
    governs its own, which a manifest only approximates until results are known."""
    fields: dict[str, Any] = {}
    results_own = {k: v for k, v in entry.results_fields.items() if k not in SHARED_FIELDS}
    if entry.results_fields and not manifest_known:
        fields.update({k: entry.results_fields[k] for k in SHARED_FIELDS
                       if k in entry.results_fields})
    for key, value in entry.manifest_fields.items():
        if key not in FALLBACK_FIELDS or not results_known:
            fields[key] = value
    fields.update(results_own)
    unknown = set(fields) - RUN_COLUMNS
    if unknown:  # a field without a column is a bug of this package, never of the input
        raise ValueError(f"no history column for {sorted(unknown)}")
    return fields


def _same_content(entry: Entry, row: Any) -> bool:
    parts = [(entry.manifest_digest, row["manifest_digest"]),
             (entry.results_digest, row["results_digest"])]
    return all(mine is None or mine == theirs for mine, theirs in parts)


def apply_entry(db: History, entry: Entry) -> Recorded:
    """Add or update one entry in its own write transaction."""
    with db.write() as conn:
        row = conn.execute("SELECT * FROM runs WHERE run_id = ?", (entry.run_id,)).fetchone()
        now = now_iso()
        if row is None:
            fields = _fields(entry, entry.manifest_digest is not None,
                             entry.results_digest is not None)
            fields.update(
                run_id=entry.run_id, kind=entry.kind, out_dir=entry.out_dir,
                manifest_file=entry.manifest_file, manifest_digest=entry.manifest_digest,
                results_file=entry.results_file, results_digest=entry.results_digest,
                indexed_at=now, updated_at=now,
            )
            _insert(conn, "runs", [fields])
            if entry.cells is not None:
                _replace_verdicts(conn, entry)
            return Recorded(history=str(db.path), run_id=entry.run_id, action="added")
        moved = row["out_dir"] != entry.out_dir
        # The history has the run without its results (its results.json was missing or
        # damaged where it was indexed) and this copy brings them for the same session:
        # the copy completes the run, it does not contradict it.
        fills_in = (row["results_digest"] is None and entry.results_digest is not None
                    and entry.manifest_digest in (None, row["manifest_digest"]))
        if moved and Path(row["out_dir"]).exists() and not fills_in:
            if _same_content(entry, row):
                return Recorded(
                    history=str(db.path), run_id=entry.run_id, action="copy",
                    detail=f"already indexed from {row['out_dir']}",
                )
            raise HistoryError(
                entry.results_file or entry.manifest_file or entry.out_dir,
                f"holds run {entry.run_id}, which the history already has from "
                f"{row['out_dir']} with other content (a copy of an output directory "
                "changed since it was copied?); it was not indexed",
                "Compare it by its directory instead of its run id",
            )
        changed_manifest = (entry.manifest_digest is not None
                            and entry.manifest_digest != row["manifest_digest"])
        changed_results = (entry.results_digest is not None
                           and entry.results_digest != row["results_digest"])
        updates: dict[str, Any] = {}
        if changed_results or changed_manifest:
            updates.update(_fields(
                entry,
                entry.manifest_digest is not None or row["manifest_digest"] is not None,
                entry.results_digest is not None or row["results_digest"] is not None,
            ))
        if changed_results:
            updates["results_digest"] = entry.results_digest
        if changed_manifest:
            updates["manifest_digest"] = entry.manifest_digest
        for name in ("manifest_file", "results_file"):
            value = getattr(entry, name)
            if value is not None and value != row[name]:
                updates[name] = value
        if moved:
            updates["out_dir"] = entry.out_dir
        if not updates:
            return Recorded(history=str(db.path), run_id=entry.run_id, action="unchanged")
        updates["updated_at"] = now
        assignments = ", ".join(f"{k} = ?" for k in updates)
        conn.execute(
            f"UPDATE runs SET {assignments} WHERE run_id = ?",
            (*updates.values(), entry.run_id),
        )
        if changed_results and entry.cells is not None:
            _replace_verdicts(conn, entry)
        detail = f"moved from {row['out_dir']}" if moved else ""
        if moved and fills_in:
            detail = f"its results read here ({row['out_dir']} had none that read)"
        return Recorded(
            history=str(db.path), run_id=entry.run_id, action="updated", detail=detail
        )


# --------------------------------------------------------------------------- public


def record_session(
    history_path: Path,
    out_dir: Path,
    results: ResultsFile | LabRun | None,
    manifest: SessionRecord | None,
    *,
    results_path: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> Recorded:
    """Record one session in the history (created if missing): a pytest session (its
    manifest and results, as written to ``out_dir``; its results.json at ``results_path``
    when that is not ``out_dir``'s), results written without a session
    (``manifest`` None), or a lab run (``results`` a LabRun, ``manifest`` None).

    Called by the one process that writes the session's records (the pytest controller,
    the demo, the lab command), after they are on disk: pass ``results`` only once
    results.json (or run.json) was written, so the history never holds a record the
    output directory does not. Waits up to ``timeout`` seconds for another writer, then
    raises HistoryLocked; a damaged history raises HistoryCorrupt. Either way nothing in
    ``out_dir`` is touched, and ``index_output`` can add the session later.
    """
    if isinstance(results, LabRun):
        if manifest is not None:
            raise ValueError("a lab run has no session manifest")
        entry = lab_entry(out_dir, results)
    else:
        entry = session_entry(out_dir, manifest, results, results_path=results_path)
    with open_history(Path(history_path), timeout=timeout, create=True) as db:
        return apply_entry(db, entry)


M = TypeVar("M", bound=BaseModel)


def _scrubbed(model: M | None) -> M | None:
    """``model`` without the process's known secrets (the same object when it has none)."""
    if model is None:
        return None
    dumped = model.model_dump(mode="json")
    clean = scrub_value(dumped)
    return model if clean is dumped else type(model).model_validate(clean)


def record_session_end(
    chosen: str | None,
    out_dir: Path,
    results: ResultsFile,
    manifest: SessionRecord | None,
    *,
    results_path: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> tuple[str, bool] | None:
    """Record a pytest session as it ends (SPEC I76), called by the controller once its
    results.json and manifest (``manifest``; None when it could not be written) are on
    disk. ``results_path`` is where the session's own results.json was written when it is
    not the directory's (a slice beside a whole wave, another rule version: SPEC I97,
    I98). ``chosen`` is ``--sabot-history``: a file, ``none`` (nothing recorded: returns
    None), or unset (the output root's history). Returns the line to print and whether it
    is a problem. A history that is locked, damaged or cannot be written costs the session
    nothing: the line names the file, what is wrong and how to add the run later."""
    if chosen is not None and chosen.strip().lower() == "none":
        return None
    clean = _scrubbed(results)  # SPEC I106
    assert clean is not None
    results, manifest = clean, _scrubbed(manifest)
    path = Path(chosen) if chosen else default_history_path(out_dir)
    run_id = manifest.run_id if manifest is not None else (
        results.session.run_id if results.session is not None else str(out_dir))
    later = (f"its records in {out_dir} are intact; add it later with `sabot history "
             f"--history {path} index {out_dir}`")
    try:
        done = record_session(path, out_dir, results, manifest, results_path=results_path,
                              timeout=timeout)
    except SabotDataError as exc:
        return (f"pytest-sabot: session {run_id} is not in the run history: {exc}; {later}",
                True)
    except Exception as exc:  # the history must never cost the session its results
        return (f"pytest-sabot: session {run_id} is not in the run history "
                f"({type(exc).__name__}: {exc}); {later}", True)
    return f"history: session {done.run_id} {done.action} in {path}", False


def run_dirs(top: Path) -> list[Path]:
    """Every output directory under ``top`` (itself included): those holding sessions/,
    results.json or lab run records. Cell records and set-aside records are not entered."""
    found: list[Path] = []
    for dirpath, dirnames, _ in os.walk(top):
        here = Path(dirpath)
        skip = SKIP_DIRS
        if is_run_dir(here):
            found.append(here)
            skip = SKIP_DIRS | APART_DIRS
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.startswith("."))
    return found


def _entries(out_dir: Path, problems: list[IndexProblem]) -> Iterator[Entry]:
    """The entries of one output directory, oldest session first; a record that does
    not read is reported and left out."""

    def attempt(path: Path, read: Any) -> Any:
        try:
            return read(path)
        except SabotDataError as exc:
            text = str(exc)
            prefix = f"{exc.file}: "
            problem = text[len(prefix):] if text.startswith(prefix) else text
            problems.append(IndexProblem(file=exc.file, problem=problem))
            return None

    results = None
    rpath = results_file(out_dir)
    if rpath.is_file():
        results = attempt(rpath, read_results_file)
    results_owner = results.session.run_id if results and results.session else None
    paired = False
    for mpath in manifest_files(out_dir):
        manifest = attempt(mpath, read_manifest)
        if manifest is None:
            continue
        apart = _apart_board(out_dir, manifest, attempt)
        if apart is not None:  # its own board; the directory's reading of it is not a run
            paired = paired or results_owner == manifest.run_id
            yield session_entry(out_dir, manifest, apart[1], manifest_file=mpath,
                                results_path=apart[0])
            continue
        mine = results if results_owner == manifest.run_id else None
        paired = paired or mine is not None
        yield session_entry(out_dir, manifest, mine, manifest_file=mpath, results_path=rpath)
    if results is not None and not paired:
        yield session_entry(out_dir, None, results, results_path=rpath)
    for lpath in lab_files(out_dir):
        record = attempt(lpath, read_lab_run)
        if record is not None:
            yield lab_entry(out_dir, record, run_path=lpath)


def _apart_board(
    out_dir: Path, manifest: SessionRecord, attempt: Any
) -> tuple[Path, ResultsFile] | None:
    """The session's own board when it was kept apart from the directory's (a slice beside
    a whole wave, a reading under other rules) and still describes that session."""
    for path in (out_dir / SLICES_DIR / manifest.run_id / RESULTS_FILE,
                 out_dir / READINGS_DIR / manifest.rules / RESULTS_FILE):
        if not path.is_file():
            continue
        board = attempt(path, read_results_file)
        if board is not None and board.session is not None \
                and board.session.run_id == manifest.run_id:
            return path, board
    return None


def index_output(
    out_dir: Path,
    history_path: Path | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> IndexReport:
    """(Re)build the history from the records under ``out_dir`` (an output directory or
    a whole output root): every session manifest, results.json and lab run record found.
    Idempotent: indexing what is already indexed writes nothing. Reads ``out_dir`` only.

    ``history_path`` defaults to the output root's ``history.sqlite``
    (:func:`~pytest_sabot.history.store.history_for_tree`).
    """
    top = Path(out_dir)
    if not top.is_dir():
        raise SabotDataError(top, "", "an output directory (--sabot-out, sabot demo --out, "
                             "lab run --out) or an output root holding them",
                             "no such directory")
    history = Path(history_path) if history_path is not None else history_for_tree(top)
    dirs = run_dirs(top)
    report = IndexReport(history=str(history), scanned=[str(d) for d in dirs])
    with open_history(history, timeout=timeout, create=True) as db:
        for directory in dirs:
            for entry in _entries(directory, report.problems):
                try:
                    done = apply_entry(db, entry)
                except HistoryError as exc:
                    if exc.file == str(history):
                        raise  # the history itself failed: locked or damaged
                    report.problems.append(IndexProblem(file=exc.file, problem=exc.problem))
                    continue
                bucket = {"added": report.added, "updated": report.updated,
                          "unchanged": report.unchanged, "copy": report.copies}[done.action]
                bucket.append(done.run_id)
    return report


__all__ = [
    "IndexProblem",
    "IndexReport",
    "Recorded",
    "apply_entry",
    "index_output",
    "record_session",
    "record_session_end",
    "run_dirs",
]
