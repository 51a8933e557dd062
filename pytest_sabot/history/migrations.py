"""The history's tables, as forward migrations.

A history records which migrations it has had in ``schema_version`` (one row per
version, with when and by which pytest-sabot it was applied). Opening a history applies
the missing ones in order, inside one write transaction, so two processes opening an old
history at once upgrade it once. A migration is never edited after release: a change is a
new migration with the next number. A history whose newest version is above
:data:`LATEST` was written by a newer pytest-sabot and is refused, never downgraded.

The tables (docs/HISTORY.md describes every column):

* ``runs``: one row per session (a wave or slice run by pytest, a demo or other results
  written without a session, a lab run);
* ``cells``: one row per cell of a run: its verdict, funnel path, exclusion, acts, or the
  reason it has none (not run, unpaired, structural zero), or a lab run's gate;
* ``score_rows``: one row per scoreboard row of a run: Sabot Score with its interval,
  valid count, clean-run firing rate, companion rates, exclusions;
* ``snapshots``: the results.json (or run.json) a run was indexed from, compressed, so a
  run whose results.json a later session replaced can still be compared.
"""

from __future__ import annotations

APPLICATION_ID = 0x53616274  # "Sabt": marks an SQLite file as a Sabot history

_V1 = (
    """
    CREATE TABLE schema_version (
        version INTEGER PRIMARY KEY,
        applied_at TEXT NOT NULL,
        tool TEXT NOT NULL
    )
    """,
    """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('session', 'results', 'lab')),
        started TEXT,
        ended TEXT,
        out_dir TEXT NOT NULL,
        tool TEXT,
        wave INTEGER,
        rules TEXT,
        wave_rules TEXT,
        model TEXT,
        downgrade_model TEXT,
        judge TEXT,
        upstream TEXT,
        fixture INTEGER NOT NULL DEFAULT 0,
        label TEXT NOT NULL DEFAULT '',
        registration_hash TEXT,
        versions TEXT NOT NULL DEFAULT '{}',
        off_pin TEXT NOT NULL DEFAULT '{}',
        mode TEXT,
        status TEXT,
        detail TEXT NOT NULL DEFAULT '',
        selection TEXT NOT NULL DEFAULT '{}',
        selected INTEGER,
        recorded INTEGER,
        complete INTEGER,
        spend TEXT,
        spent_usd REAL,
        unknown_cost_calls INTEGER,
        model_calls INTEGER,
        upstream_calls INTEGER,
        project_spent_usd REAL,
        ledger TEXT,
        host TEXT,
        pid INTEGER,
        manifest_file TEXT,
        manifest_digest TEXT,
        results_file TEXT,
        results_digest TEXT,
        indexed_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )
    """,
    """
    CREATE TABLE cells (
        run_id TEXT NOT NULL REFERENCES runs (run_id),
        cell_id TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (
            kind IN ('fault', 'baseline', 'structural_zero', 'not_run', 'unpaired', 'lab')
        ),
        row TEXT,
        framework TEXT,
        config TEXT,
        operator TEXT,
        task TEXT,
        seed INTEGER,
        verdict TEXT NOT NULL,
        funnel TEXT,
        detection TEXT,
        detection_path TEXT,
        detected_hard INTEGER,
        detected_soft INTEGER,
        reacted INTEGER,
        recovered INTEGER,
        exclusion TEXT,
        reason TEXT NOT NULL DEFAULT '',
        acts TEXT NOT NULL DEFAULT '',
        record_run TEXT,
        gate TEXT,
        gate_exit INTEGER,
        PRIMARY KEY (run_id, cell_id)
    )
    """,
    """
    CREATE TABLE score_rows (
        run_id TEXT NOT NULL REFERENCES runs (run_id),
        row TEXT NOT NULL,
        framework TEXT NOT NULL,
        config TEXT NOT NULL,
        headline_reading TEXT NOT NULL,
        runs INTEGER NOT NULL,
        valid INTEGER NOT NULL,
        score_k INTEGER NOT NULL,
        score_n INTEGER NOT NULL,
        score REAL,
        score_low REAL,
        score_high REAL,
        clean_k INTEGER NOT NULL,
        clean_n INTEGER NOT NULL,
        clean_fire REAL,
        clean_low REAL,
        clean_high REAL,
        soft_notice REAL,
        reaction REAL,
        recovery REAL,
        recovery_without_detection REAL,
        override_gap REAL,
        run_error INTEGER NOT NULL,
        baseline_fail INTEGER NOT NULL,
        injection_unverified INTEGER NOT NULL,
        baselines_passed INTEGER NOT NULL,
        baselines_recorded INTEGER NOT NULL,
        PRIMARY KEY (run_id, row)
    )
    """,
    """
    CREATE TABLE snapshots (
        run_id TEXT PRIMARY KEY REFERENCES runs (run_id),
        format TEXT NOT NULL CHECK (format IN ('results.json', 'run.json')),
        digest TEXT NOT NULL,
        data BLOB NOT NULL
    )
    """,
)

# Lookups the commands make: newest first, by registration, and one cell across runs.
_V2 = (
    "CREATE INDEX runs_by_time ON runs (started, run_id)",
    "CREATE INDEX runs_by_registration ON runs (registration_hash)",
    "CREATE INDEX cells_by_cell ON cells (cell_id, run_id)",
)

MIGRATIONS: dict[int, tuple[str, ...]] = {1: _V1, 2: _V2}
LATEST = max(MIGRATIONS)
