"""The local run history: every session (a wave, a slice, a demo, a lab run) indexed in
one SQLite file, so runs can be listed, shown, resolved by id and checked for
regressions. It is an index over the records on disk, never their only copy:
:func:`index_output` rebuilds it from the session manifests, results.json and run.json
files of an output tree. See docs/HISTORY.md.

Writing (the one process that writes a session's records):

* ``record_session(history_path, out_dir, results, manifest) -> Recorded``
* ``index_output(out_dir, history_path=None) -> IndexReport``

Reading:

* ``list_runs(history_path)``, ``show_run(history_path, ref)``
* ``resolve_run(history_path, ref) -> Path`` (the run's output directory) and
  ``resolve_results(history_path, ref)`` (that directory and the run's own results.json)
* ``load_run_results(history_path, ref) -> LoadedRun`` (its results, from disk or the
  history's copy)

Checking: ``detect_regressions(a, b) -> RegressionReport`` (pure). Commands:
:mod:`pytest_sabot.commands.history` (``sabot history``, ``sabot regress``; ``python -m
pytest_sabot.history`` is a shim over it).
"""

from __future__ import annotations

from pytest_sabot.history.errors import (
    HistoryCorrupt,
    HistoryError,
    HistoryLocked,
    HistoryNewer,
    RunNotFound,
)
from pytest_sabot.history.queries import (
    LoadedRun,
    RunDetail,
    RunSummary,
    list_runs,
    load_lab_run,
    load_run_results,
    resolve_results,
    resolve_run,
    show_run,
)
from pytest_sabot.history.record import IndexReport, Recorded, index_output, record_session
from pytest_sabot.history.regress import (
    DEFAULT_MIN_PAIRED,
    REGRESSION_RULE,
    RegressionReport,
    detect_regressions,
)
from pytest_sabot.history.store import (
    DEFAULT_TIMEOUT_S,
    HISTORY_ENV,
    HISTORY_FILE,
    chosen_history,
    default_history_path,
    open_history,
)

__all__ = [
    "DEFAULT_MIN_PAIRED",
    "DEFAULT_TIMEOUT_S",
    "HISTORY_ENV",
    "HISTORY_FILE",
    "REGRESSION_RULE",
    "HistoryCorrupt",
    "HistoryError",
    "HistoryLocked",
    "HistoryNewer",
    "IndexReport",
    "LoadedRun",
    "Recorded",
    "RegressionReport",
    "RunDetail",
    "RunNotFound",
    "RunSummary",
    "chosen_history",
    "default_history_path",
    "detect_regressions",
    "index_output",
    "list_runs",
    "load_lab_run",
    "load_run_results",
    "open_history",
    "record_session",
    "resolve_results",
    "resolve_run",
    "show_run",
]
