"""Reading the history: the runs, newest first (``sabot history``), one run with its rows
and cells (``sabot history show RUN``), and a run id (or a unique prefix of one) turned
into its output directory or its results (``sabot compare RUN_A RUN_B``).

Reading never writes the history (apart from upgrading an older schema once) and never
reads an output directory, except :func:`load_run_results`, which prefers the run's own
results.json when it still describes the run.
"""

from __future__ import annotations

import json
import os
import sqlite3
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.history.errors import HistoryError, RunNotFound
from pytest_sabot.history.sources import (
    LabRun,
    ResultsFile,
    digest_of,
    lab_run_from_snapshot,
    read_lab_run,
    read_results_file,
    results_from_snapshot,
)
from pytest_sabot.history.store import DEFAULT_TIMEOUT_S, History, open_history
from pytest_sabot.results import RESULTS_FILE
from pytest_sabot.results.outcomes import letter

RecordT = TypeVar("RecordT", bound=BaseModel)


class RunSummary(FrozenModel):
    """One run as ``sabot history`` lists it."""

    run_id: str = Field(description="Session run id (or derived id, see docs/HISTORY.md).")
    kind: str = Field(description="session (pytest), results (no session) or lab.")
    started: str | None = Field(description="When it started (UTC, ISO 8601).")
    ended: str | None = Field(description="When it ended.")
    out_dir: str = Field(description="Its output directory.")
    wave: int | None = Field(description="Wave (None for a lab run).")
    status: str | None = Field(description="How it ended (session status, lab execution).")
    registration_hash: str | None = Field(
        description="sha256 of cells/, tasks/, mappings/ (a lab run: the scenario digest)."
    )
    model: str | None = Field(description="Pipeline model spec (a lab run: the agent).")
    rules: str | None = Field(description="Rule version.")
    fixture: bool = Field(description="Keyless: fixtures of the embedded model, not measurements.")
    label: str = Field(description="How its numbers must be described.")
    selected: int | None = Field(description="Runnable cells selected.")
    recorded: int | None = Field(description="Selected cells with a counted record.")
    counts: dict[str, int] = Field(description="Cells per verdict word (lab: per gate).")
    letters: dict[str, int] = Field(
        description="Cells per outcome letter, the letters pytest shows (none for a lab run)."
    )
    spent_usd: float | None = Field(description="Spend from reported usage (None: unknown).")
    verdicts: bool = Field(description="The history holds its cells' verdicts.")


class ScoreRowInfo(FrozenModel):
    """One scoreboard row of a run."""

    row: str
    headline_reading: str
    runs: int = Field(description="Fault runs scored.")
    valid: int = Field(description="Valid fault runs (the denominator).")
    score_k: int
    score_n: int
    score: float | None = Field(description="Sabot Score (DETECTED_HARD / valid).")
    score_low: float | None = Field(description="Wilson 95% lower bound.")
    score_high: float | None = Field(description="Wilson 95% upper bound.")
    clean_k: int
    clean_n: int
    clean_fire: float | None = Field(description="Clean-run firing rate (SPEC I27).")
    clean_low: float | None
    clean_high: float | None
    soft_notice: float | None
    reaction: float | None
    recovery: float | None
    recovery_without_detection: float | None
    override_gap: float | None
    run_error: int
    baseline_fail: int
    injection_unverified: int
    baselines_passed: int
    baselines_recorded: int


class CellInfo(FrozenModel):
    """One cell of a run."""

    cell_id: str
    kind: str = Field(description="fault, baseline, structural_zero, not_run, unpaired, lab.")
    row: str | None
    operator: str | None
    task: str | None
    seed: int | None
    verdict: str = Field(description="One word (SPEC I48), NOT_RUN, UNPAIRED or a lab gate.")
    funnel: str | None = Field(description="The funnel path, e.g. DETECTED_HARD REACTED.")
    detection_path: str | None = Field(description="Mapping rows of the detecting act.")
    exclusion: str | None
    reason: str
    acts: str = Field(description="Acts found, act@seq (lab: violated rules).")
    record_run: str | None = Field(description="Run id of the session whose record counted.")
    gate: str | None
    gate_exit: int | None


class RunDetail(FrozenModel):
    """Everything the history holds of one run (``history show --json``)."""

    summary: RunSummary
    tool: str | None
    wave_rules: str | None
    downgrade_model: str | None
    judge: str | None
    upstream: str | None
    versions: dict[str, str]
    off_pin: dict[str, str]
    mode: str | None
    detail: str
    selection: dict[str, Any]
    complete: bool | None
    spend: dict[str, Any] | None
    host: str | None
    pid: int | None
    manifest_file: str | None
    results_file: str | None
    indexed_at: str
    updated_at: str
    rows: list[ScoreRowInfo]
    cells: list[CellInfo]
    partial: list[str] = Field(
        default_factory=list,
        description="Why the run's board is not its wave's (SPEC I91: a slice, cells not run, "
        "fault cells unpaired, fewer rows in the median than registered), read from the "
        "history's copy of its results; empty for a whole board and for a run the history "
        "holds no results of.",
    )
    gates_failed: list[str] = Field(
        default_factory=list,
        description="The session's gates that failed (SPEC I43: a row under "
        "--sabot-fail-under, the RUN_ERROR share, a gated row's baselines), each as its "
        "results say it, read from the history's copy of its results.",
    )


_LIST_SQL = """
SELECT * FROM runs ORDER BY COALESCE(started, indexed_at) DESC, run_id DESC
"""


def _counts(
    db: History, run_id: str | None = None
) -> dict[str, tuple[dict[str, int], dict[str, int]]]:
    """Cells per verdict word and per outcome letter (``results.outcomes.letter``), per run
    (of one run when ``run_id`` is given)."""
    where, params = ("WHERE run_id = ?", (run_id,)) if run_id else ("", ())
    counts: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
    for r in db.all(
        f"SELECT run_id, kind, verdict, COUNT(*) AS n FROM cells {where} "
        "GROUP BY run_id, kind, verdict ORDER BY run_id, kind, verdict",
        params,
    ):
        words, letters = counts.setdefault(str(r["run_id"]), ({}, {}))
        word, n = str(r["verdict"]), int(r["n"])
        words[word] = words.get(word, 0) + n
        if r["kind"] != "lab":
            mark = letter(word, baseline=r["kind"] == "baseline")
            letters[mark] = letters.get(mark, 0) + n
    return counts


_NONE: tuple[dict[str, int], dict[str, int]] = ({}, {})


def _summary(r: sqlite3.Row, counts: tuple[dict[str, int], dict[str, int]]) -> RunSummary:
    words, letters = counts
    return RunSummary(
        run_id=r["run_id"], kind=r["kind"], started=r["started"], ended=r["ended"],
        out_dir=r["out_dir"], wave=r["wave"], status=r["status"],
        registration_hash=r["registration_hash"], model=r["model"], rules=r["rules"],
        fixture=bool(r["fixture"]), label=r["label"], selected=r["selected"],
        recorded=r["recorded"], counts=words, letters=letters, spent_usd=r["spent_usd"],
        verdicts=bool(words),
    )


def runs(db: History, limit: int | None = None) -> list[RunSummary]:
    rows = db.all(_LIST_SQL)
    if limit is not None:
        rows = rows[:limit]
    counts = _counts(db)
    return [_summary(r, counts.get(r["run_id"], _NONE)) for r in rows]


def list_runs(
    history_path: Path, *, limit: int | None = None, timeout: float = DEFAULT_TIMEOUT_S
) -> list[RunSummary]:
    """The runs of the history, newest first."""
    with open_history(Path(history_path), timeout=timeout) as db:
        return runs(db, limit)


def count_runs(history_path: Path, *, timeout: float = DEFAULT_TIMEOUT_S) -> int:
    """How many runs the history holds."""
    with open_history(Path(history_path), timeout=timeout) as db:
        row = db.one("SELECT COUNT(*) AS n FROM runs")
        return int(row["n"]) if row is not None else 0


def frameworks_by_run(
    history_path: Path, *, timeout: float = DEFAULT_TIMEOUT_S
) -> dict[str, list[str]]:
    """The frameworks each run's cells ran on (sorted), by run id; a lab run has none."""
    found: dict[str, list[str]] = {}
    with open_history(Path(history_path), timeout=timeout) as db:
        for r in db.all(
            "SELECT DISTINCT run_id, framework FROM cells WHERE framework IS NOT NULL "
            "ORDER BY run_id, framework"
        ):
            found.setdefault(str(r["run_id"]), []).append(str(r["framework"]))
    return found


def find_run(db: History, ref: str) -> str:
    """The run id ``ref`` names: an exact id, else the one run whose id starts with it."""
    ref = ref.strip()
    if not ref:
        raise RunNotFound(db.path, "an empty run id was given", "Give a run id or its prefix")
    if db.one("SELECT 1 FROM runs WHERE run_id = ?", (ref,)) is not None:
        return ref
    found = [
        str(r["run_id"])
        for r in db.all(
            "SELECT run_id FROM runs WHERE substr(run_id, 1, ?) = ? ORDER BY run_id",
            (len(ref), ref),
        )
    ]
    if len(found) == 1:
        return found[0]
    total = int(db.one("SELECT COUNT(*) FROM runs")[0])  # type: ignore[index]
    if not found:
        newest = db.one(
            "SELECT run_id FROM runs ORDER BY COALESCE(started, indexed_at) DESC LIMIT 1"
        )
        hint = f"; the newest is {newest['run_id']}" if newest else ""
        # A run id never holds a path separator nor ends in .json: a path that is not there.
        if "/" in ref or os.sep in ref or ref.endswith(".json"):
            raise RunNotFound(
                db.path,
                f"{ref!r} is no directory or file here, and no run id starts with it "
                f"({total} run(s) in this history{hint})",
                "Check the path (a results directory or its results.json), or give a run id "
                "from `sabot history`",
            )
        raise RunNotFound(
            db.path,
            f"no run id starts with {ref!r} ({total} run(s) in this history{hint})",
            "List them with `sabot history`",
        )
    shown = ", ".join(found[:6]) + (", ..." if len(found) > 6 else "")
    raise RunNotFound(
        db.path,
        f"{ref!r} is the prefix of {len(found)} run ids ({shown})",
        "Give more of the id",
    )


def _cell(r: sqlite3.Row) -> CellInfo:
    return CellInfo(
        cell_id=r["cell_id"], kind=r["kind"], row=r["row"], operator=r["operator"],
        task=r["task"], seed=r["seed"], verdict=r["verdict"], funnel=r["funnel"],
        detection_path=r["detection_path"], exclusion=r["exclusion"], reason=r["reason"],
        acts=r["acts"], record_run=r["record_run"], gate=r["gate"], gate_exit=r["gate_exit"],
    )


def _score_row(r: sqlite3.Row) -> ScoreRowInfo:
    return ScoreRowInfo(**{k: r[k] for k in ScoreRowInfo.model_fields})


def detail(db: History, run_id: str) -> RunDetail:
    r = db.one("SELECT * FROM runs WHERE run_id = ?", (run_id,))
    if r is None:
        raise RunNotFound(db.path, f"no run {run_id!r}")
    spend = json.loads(r["spend"]) if r["spend"] else None
    return RunDetail(
        summary=_summary(r, _counts(db, run_id).get(run_id, _NONE)), tool=r["tool"],
        wave_rules=r["wave_rules"],
        downgrade_model=r["downgrade_model"], judge=r["judge"], upstream=r["upstream"],
        versions=json.loads(r["versions"]), off_pin=json.loads(r["off_pin"]), mode=r["mode"],
        detail=r["detail"], selection=json.loads(r["selection"]),
        complete=None if r["complete"] is None else bool(r["complete"]), spend=spend,
        host=r["host"], pid=r["pid"], manifest_file=r["manifest_file"],
        results_file=r["results_file"], indexed_at=r["indexed_at"], updated_at=r["updated_at"],
        rows=[_score_row(x) for x in db.all(
            "SELECT * FROM score_rows WHERE run_id = ? ORDER BY row", (run_id,))],
        cells=[_cell(x) for x in db.all(
            "SELECT * FROM cells WHERE run_id = ? ORDER BY kind = 'baseline' DESC, row, "
            "cell_id", (run_id,))],
        **(_from_results(db, run_id) if r["kind"] != "lab" else {}),
    )


def _from_results(db: History, run_id: str) -> dict[str, list[str]]:
    """What the history's copy of the run's results.json says beyond its tables: why its
    board is partial, and which of its session's gates failed."""
    kept = db.one("SELECT data FROM snapshots WHERE run_id = ?", (run_id,))
    if kept is None or kept["data"] is None:
        return {}
    try:
        results = results_from_snapshot(bytes(kept["data"]))
    except (ValueError, SabotDataError, zlib.error):  # a copy this version cannot read
        return {}
    short = results.short_median
    return {
        "partial": [*results.partial_reasons, *([short] if short else [])],
        "gates_failed": [g.message for g in results.gates or []
                         if not g.passed],
    }


def show_run(
    history_path: Path, ref: str, *, timeout: float = DEFAULT_TIMEOUT_S
) -> RunDetail:
    """One run (by id or unique prefix): its session fields, rows and cells."""
    with open_history(Path(history_path), timeout=timeout) as db:
        return detail(db, find_run(db, ref))


def resolve_run(
    history_path: Path, ref: str, *, timeout: float = DEFAULT_TIMEOUT_S
) -> Path:
    """The output directory of the run ``ref`` names (an id or a unique prefix): where its
    records (and, but for a slice or reading kept apart, its results.json or a lab run's
    run.json) were written. Raises RunNotFound for no match or an ambiguous prefix,
    HistoryError when the directory is gone."""
    return resolve_results(history_path, ref, timeout=timeout)[0]


def resolve_results(
    history_path: Path, ref: str, *, timeout: float = DEFAULT_TIMEOUT_S
) -> tuple[Path, Path]:
    """(the output directory of the run ``ref`` names, the results.json that is its own):
    the directory's results.json, or the one a slice beside a whole wave or a reading under
    other rules was written to (``slices/<run id>/``, ``readings/<rules>/``: SPEC I97,
    I98), whose cell records are the directory's. Raises as :func:`resolve_run`."""
    with open_history(Path(history_path), timeout=timeout) as db:
        run_id = find_run(db, ref)
        row = db.one("SELECT out_dir, results_file FROM runs WHERE run_id = ?", (run_id,))
        assert row is not None
        out = Path(row["out_dir"])
        own = Path(row["results_file"]) if row["results_file"] else out / RESULTS_FILE
    if not out.is_dir():
        raise HistoryError(
            history_path,
            f"run {run_id} was written to {out}, which no longer exists",
            "If the directory was moved, index its new place (python -m "
            "pytest_sabot.history index DIR)",
        )
    return out, own


class LoadedRun(FrozenModel):
    """A run's results for a comparison, and where they were read."""

    run_id: str
    results: ResultsFile
    source: str = Field(description="The file read, or the history's copy.")
    note: str = Field("", description="Why the history's copy was read, if it was.")


def _on_disk(
    path: str | None, digest: str | None, read: Callable[[Path], RecordT]
) -> RecordT | None:
    """The record at ``path`` (read with ``read``) when the file there is still exactly
    what was indexed."""
    if not path or not digest or not Path(path).is_file():
        return None
    try:
        record = read(Path(path))
    except SabotDataError:
        return None
    return record if digest_of(record)[0] == digest else None


def _indexed_run(history_path: Path, ref: str, timeout: float) -> tuple[str, sqlite3.Row]:
    """(the run id ``ref`` names, its row: kind, results file and digest, output directory
    and the history's copy of the record)."""
    with open_history(Path(history_path), timeout=timeout) as db:
        run_id = find_run(db, ref)
        row = db.one(
            "SELECT r.kind, r.results_file, r.results_digest, r.out_dir, s.data "
            "FROM runs r LEFT JOIN snapshots s ON s.run_id = r.run_id WHERE r.run_id = ?",
            (run_id,),
        )
        assert row is not None
    return run_id, row


def load_run_results(
    history_path: Path, ref: str, *, timeout: float = DEFAULT_TIMEOUT_S
) -> LoadedRun:
    """The results of the run ``ref`` names: its results.json when that file still holds
    exactly what was indexed, else the copy the history kept when it indexed it (a later
    session in the same directory replaced results.json). A lab run has a gate, not a
    Sabot Score, and is refused."""
    run_id, row = _indexed_run(history_path, ref, timeout)
    if row["kind"] == "lab":
        raise HistoryError(
            history_path,
            f"run {run_id} is a lab run: it has a gate, not Sabot Scores to compare",
            "Compare scored runs (pytest sessions, sabot demo); a lab run's gate is in "
            "`sabot history show`",
        )
    found = _on_disk(row["results_file"], row["results_digest"], read_results_file)
    if found is not None:
        return LoadedRun(run_id=run_id, results=found, source=str(row["results_file"]))
    if row["data"] is None:
        raise HistoryError(
            history_path,
            f"run {run_id} has no verdicts in the history: its results.json in "
            f"{row['out_dir']} had already been replaced by a later session when it was "
            "indexed",
            "Its records are still on disk (superseded/); only the last session of a "
            "directory can be compared when it was not recorded as it ended",
        )
    results = results_from_snapshot(bytes(row["data"]))
    now = row["results_file"] or row["out_dir"]
    return LoadedRun(
        run_id=run_id,
        results=results,
        source=f"{history_path} (copy of run {run_id}'s results.json)",
        note=f"{now} no longer holds this run's results (a later session replaced it or "
        "it was rescored); the history's copy, made when the run was indexed, was read",
    )


def run_kind(history_path: Path, ref: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> (
        tuple[str, str]):
    """(the run id ``ref`` names, its kind: 'session' or 'lab'); RunNotFound as find_run."""
    with open_history(Path(history_path), timeout=timeout) as db:
        run_id = find_run(db, ref)
        row = db.one("SELECT kind FROM runs WHERE run_id = ?", (run_id,))
        assert row is not None
    return run_id, str(row["kind"])


def load_lab_run(history_path: Path, ref: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> LabRun:
    """A lab run's record: its run.json when unchanged, else the history's copy."""
    run_id, row = _indexed_run(history_path, ref, timeout)
    if row["kind"] != "lab":
        raise HistoryError(history_path, f"run {run_id} is not a lab run")
    found = _on_disk(row["results_file"], row["results_digest"], read_lab_run)
    if found is not None:
        return found
    if row["data"] is None:
        raise HistoryError(history_path, f"lab run {run_id} has no record on disk or here")
    return lab_run_from_snapshot(bytes(row["data"]))


def load_compare_input(
    arg: str | Path, history: Path, *, timeout: float = DEFAULT_TIMEOUT_S
) -> tuple[ResultsFile, str]:
    """One input of ``sabot compare`` or ``regress``: an existing directory or
    results.json is read as before; anything else is a run id (or a unique prefix) looked
    up in the history. Returns the results and where they were read."""
    from pytest_sabot.results.compare import load_side

    path = Path(arg)
    if path.exists():
        return load_side(path), str(path)
    if not Path(history).exists():
        raise SabotDataError(
            path, "", "a run directory, a results.json, or a run id recorded in the history "
            f"{history}", "no such file, and no history to look the id up in"
        )
    loaded = load_run_results(history, str(arg), timeout=timeout)
    return loaded.results, loaded.source


__all__ = [
    "CellInfo",
    "LoadedRun",
    "RunDetail",
    "RunSummary",
    "ScoreRowInfo",
    "detail",
    "find_run",
    "frameworks_by_run",
    "list_runs",
    "load_compare_input",
    "load_lab_run",
    "load_run_results",
    "resolve_run",
    "run_kind",
    "runs",
    "show_run",
]
