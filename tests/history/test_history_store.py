"""The history file itself: WAL mode, forward migrations, one writer at a time with a
bounded wait, a concurrent reader, and clear errors for a locked, newer or damaged
history that never touch a run's own files (SPEC I42: records are never lost; I43: a
configuration or corruption error exits 2).

Each test records real results: results.json built by ``build_results`` for a small
selection of wave 1 in a directory of its own, exactly as ``sabot demo`` writes results
without a session (nothing has run there, so every selected cell is listed as not run).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from history_inputs import tree_digest

from pytest_sabot.commands.history import history_list, history_show
from pytest_sabot.history import (
    HistoryCorrupt,
    HistoryError,
    HistoryLocked,
    HistoryNewer,
    list_runs,
    open_history,
    record_session,
    show_run,
)
from pytest_sabot.history.migrations import APPLICATION_ID, LATEST, MIGRATIONS
from pytest_sabot.matrix.standard import Standard, load_standard
from pytest_sabot.results import ResultsFile, build_results, write_results
from pytest_sabot.sim import PERSONAS

CELLS = ["langgraph-default-baseline-T1-s11", "langgraph-default-O1-T1-s11",
         "langgraph-default-O3-T1-s11"]


@pytest.fixture(scope="module")
def wave1() -> Standard:
    return load_standard(1)


def _results(std: Standard, out: Path, model: str = "sim:realistic") -> ResultsFile:
    out.mkdir(parents=True, exist_ok=True)
    results = build_results(std, out, selected_ids=CELLS, model=model)
    write_results(results, out)
    return results


def _count(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    finally:
        conn.close()


def test_I42_history_is_sqlite_in_wal_mode_with_its_schema_versions(
    wave1: Standard, tmp_path: Path
) -> None:
    history = tmp_path / "reports" / "history.sqlite"
    done = record_session(history, tmp_path / "reports" / "demo",
                          _results(wave1, tmp_path / "reports" / "demo"), None)
    assert done.action == "added" and done.run_id.startswith("results-")
    with open_history(history) as db:
        assert db.journal_mode == "wal"
        versions = [r["version"] for r in db.all("SELECT version FROM schema_version")]
        assert versions == sorted(MIGRATIONS) and db.version == LATEST
        assert db.one("PRAGMA application_id")[0] == APPLICATION_ID  # type: ignore[index]
    conn = sqlite3.connect(history)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_I42_an_older_history_is_migrated_forward_and_keeps_its_runs(
    wave1: Standard, tmp_path: Path
) -> None:
    history = tmp_path / "history.sqlite"
    conn = sqlite3.connect(history, isolation_level=None)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    for statement in MIGRATIONS[1]:
        conn.execute(statement)
    conn.execute("INSERT INTO schema_version VALUES (1, '2026-07-25T00:00:00+00:00', 'old')")
    conn.execute(
        "INSERT INTO runs (run_id, kind, out_dir, indexed_at, updated_at, model) "
        "VALUES ('20260725T000000Z-abcdef', 'session', '/gone', 't', 't', 'sim:realistic')"
    )
    conn.close()
    record_session(history, tmp_path / "demo", _results(wave1, tmp_path / "demo"), None)
    with open_history(history) as db:
        assert db.version == LATEST
        indexes = {r["name"] for r in db.all("SELECT name FROM sqlite_master "
                                             "WHERE type = 'index'")}
        assert {"runs_by_time", "runs_by_registration", "cells_by_cell"} <= indexes
        applied = [r["version"] for r in db.all("SELECT version FROM schema_version "
                                                "ORDER BY version")]
        assert applied == [1, 2]
    assert {s.run_id for s in list_runs(history)} >= {"20260725T000000Z-abcdef"}
    assert _count(history) == 2


def test_I43_a_history_of_a_newer_schema_is_refused_not_downgraded(
    wave1: Standard, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "history.sqlite"
    record_session(history, tmp_path / "demo", _results(wave1, tmp_path / "demo"), None)
    conn = sqlite3.connect(history, isolation_level=None)
    conn.execute("INSERT INTO schema_version VALUES (99, 't', 'pytest-sabot 9.0')")
    conn.close()
    with pytest.raises(HistoryNewer, match="newer pytest-sabot"):
        list_runs(history)
    assert history_list(history) == 2
    err = capsys.readouterr().err
    assert str(history) in err and "schema version 99" in err


def test_I42_a_locked_history_waits_a_bounded_time_then_names_the_file(
    wave1: Standard, tmp_path: Path
) -> None:
    history = tmp_path / "reports" / "history.sqlite"
    first = tmp_path / "reports" / "first"
    record_session(history, first, _results(wave1, first), None)
    out = tmp_path / "reports" / "second"
    results = _results(wave1, out, model="sim:vigilant")
    before = tree_digest(out)
    writer = sqlite3.connect(history, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    writer.execute("UPDATE runs SET detail = 'held' WHERE 1 = 0")
    try:
        with pytest.raises(HistoryLocked) as caught:
            record_session(history, out, results, None, timeout=0.3)
        message = str(caught.value)
        assert str(history) in message and "another process is writing" in message
        assert "0.3 s" in message and "try again" in message
        # a reader is not blocked by the writer (WAL): the history still lists its run
        assert len(list_runs(history, timeout=0.3)) == 1
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert tree_digest(out) == before  # the run's own files are untouched
    assert record_session(history, out, results, None, timeout=5).action == "added"
    assert _count(history) == 2


def test_I42_a_reader_holding_a_snapshot_does_not_block_the_writer(
    wave1: Standard, tmp_path: Path
) -> None:
    history = tmp_path / "history.sqlite"
    record_session(history, tmp_path / "a", _results(wave1, tmp_path / "a"), None)
    reader = sqlite3.connect(history, isolation_level=None)
    reader.execute("BEGIN")
    assert reader.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
    try:
        done = record_session(history, tmp_path / "b",
                              _results(wave1, tmp_path / "b", model="sim:vigilant"), None,
                              timeout=0.5)
        assert done.action == "added"
        # the reader's transaction keeps its snapshot: never half a write
        assert reader.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
    finally:
        reader.execute("COMMIT")
    assert reader.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
    reader.close()


def test_I42_writers_from_two_threads_both_land(wave1: Standard, tmp_path: Path) -> None:
    """Two writers at once (e.g. a session ending while an index is built): the second
    waits for the first's transaction, and both entries are kept."""
    history = tmp_path / "history.sqlite"
    record_session(history, tmp_path / "seed", _results(wave1, tmp_path / "seed"), None)
    outs = [(tmp_path / m, _results(wave1, tmp_path / m, model=f"sim:{m}"))
            for m in ("vigilant", "credulous")]
    errors: list[BaseException] = []

    def write(out: Path, results: ResultsFile) -> None:
        try:
            record_session(history, out, results, None, timeout=30)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=pair) for pair in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert _count(history) == 3


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_I42_a_damaged_history_is_refused_untouched_and_the_run_files_kept(
    damage: str, wave1: Standard, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "reports" / "history.sqlite"
    if damage == "garbage":
        history.parent.mkdir(parents=True)
        history.write_bytes(bytes(range(256)) * 64)
    else:
        for n, persona in enumerate(PERSONAS):  # a real history of several pages, cut
            out = tmp_path / "reports" / f"earlier-{n}"
            record_session(history, out, _results(wave1, out, model=f"sim:{persona}"), None)
        data = history.read_bytes()
        history.write_bytes(data[: len(data) // 2])
    damaged = history.read_bytes()
    out = tmp_path / "reports" / "wave-1"
    results = _results(wave1, out)
    before = tree_digest(out)
    with pytest.raises(HistoryCorrupt) as caught:
        record_session(history, out, results, None, timeout=1)
    message = str(caught.value)
    assert message.startswith(str(history))
    assert "not a readable Sabot history" in message
    assert f"mv {history} {history}.broken" in message
    assert f"index {history.parent}" in message
    assert history.read_bytes() == damaged  # not written to
    assert tree_digest(out) == before  # the run's own files untouched
    assert history_show(history, "results-") == 2
    assert "move it aside" in capsys.readouterr().err


def test_I42_another_programs_sqlite_file_is_not_taken_for_a_history(
    wave1: Standard, tmp_path: Path
) -> None:
    history = tmp_path / "history.sqlite"
    conn = sqlite3.connect(history)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()
    before = history.read_bytes()
    with pytest.raises(HistoryCorrupt, match="another program"):
        record_session(history, tmp_path / "a", _results(wave1, tmp_path / "a"), None)
    assert history.read_bytes() == before


def test_I43_reading_a_history_that_does_not_exist_says_how_to_build_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "reports" / "history.sqlite"
    with pytest.raises(HistoryError, match="no history here yet"):
        show_run(history, "2026")
    assert history_list(history) == 2
    err = capsys.readouterr().err
    assert f"index {history.parent}" in err
    assert not history.exists()  # reading never creates one
