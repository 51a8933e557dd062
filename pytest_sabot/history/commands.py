"""The history's commands, each returning the sabot exit code (SPEC I43: 0 pass, 1 a
regression, 2 configuration, corruption or a locked history, 3 inconclusive):

    history list                     the runs, newest first
    history show RUN                 one run: its session fields, rows and cells
    history index DIR...             (re)build the history from the records under DIR
    history resolve RUN              the output directory of a run
    regress A B                      did B regress from A (run ids, prefixes or directories)

They are what the ``sabot`` command line calls (and ``python -m pytest_sabot.history``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.history.queries import list_runs, load_run_results, resolve_run, show_run
from pytest_sabot.history.record import index_output
from pytest_sabot.history.regress import DEFAULT_MIN_PAIRED, detect_regressions
from pytest_sabot.history.render import (
    console,
    render_index,
    render_list,
    render_regress,
    render_show,
)
from pytest_sabot.history.sources import ResultsFile
from pytest_sabot.history.store import DEFAULT_TIMEOUT_S
from pytest_sabot.results.compare import DEFAULT_RESAMPLES, DEFAULT_SEED, load_side

EXIT_PASS, EXIT_GATE, EXIT_ERROR, EXIT_INCONCLUSIVE = 0, 1, 2, 3


def _fail(exc: Exception, command: str) -> int:
    print(f"sabot {command}: {exc}", file=sys.stderr)
    return EXIT_ERROR


def cmd_history_list(
    history: Path,
    *,
    limit: int | None = None,
    as_json: bool = False,
    width: int | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> int:
    """``sabot history``: the runs, newest first, fitted to the terminal's width."""
    try:
        summaries = list_runs(history, limit=limit, timeout=timeout)
    except SabotDataError as exc:
        return _fail(exc, "history")
    if as_json:
        print("[" + ",\n".join(s.model_dump_json(indent=2) for s in summaries) + "]")
    else:
        render_list(console(width), summaries, str(history))
    return EXIT_PASS


def cmd_history_show(
    history: Path,
    ref: str,
    *,
    as_json: bool = False,
    width: int | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> int:
    """``sabot history show RUN``: one run by id or unique prefix."""
    try:
        detail = show_run(history, ref, timeout=timeout)
    except SabotDataError as exc:
        return _fail(exc, "history show")
    if as_json:
        print(detail.model_dump_json(indent=2))
    else:
        render_show(console(width), detail)
    return EXIT_PASS


def cmd_history_index(
    history: Path | None,
    dirs: Sequence[Path],
    *,
    as_json: bool = False,
    width: int | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> int:
    """``sabot history index DIR...``: add every session found under each DIR. Exit 2
    when a record could not be indexed (each is named), 0 otherwise."""
    problems = 0
    out = console(width)
    for directory in dirs:
        try:
            report = index_output(directory, history, timeout=timeout)
        except SabotDataError as exc:
            return _fail(exc, "history index")
        problems += len(report.problems)
        if as_json:
            print(report.model_dump_json(indent=2))
        else:
            render_index(out, report)
    return EXIT_ERROR if problems else EXIT_PASS


def cmd_history_resolve(history: Path, ref: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> int:
    """``sabot history resolve RUN``: print the run's output directory."""
    try:
        print(resolve_run(history, ref, timeout=timeout))
    except SabotDataError as exc:
        return _fail(exc, "history resolve")
    return EXIT_PASS


def load_compare_input(
    arg: str | Path, history: Path, *, timeout: float = DEFAULT_TIMEOUT_S
) -> tuple[ResultsFile, str]:
    """One input of ``sabot compare`` or ``regress``: an existing directory or
    results.json is read as before; anything else is a run id (or a unique prefix) looked
    up in the history. Returns the results and where they were read."""
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


def cmd_regress(
    history: Path,
    a: str,
    b: str,
    *,
    as_json: bool = False,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    min_paired: int = DEFAULT_MIN_PAIRED,
    width: int | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> int:
    """``sabot regress A B``: 1 when a row of B dropped beyond its interval from A, 0
    when none did, 3 when the runs are of different registrations or no row has enough
    paired cells, 2 on bad input."""
    if resamples < 1 or min_paired < 1:
        print("sabot regress: --resamples and --min-paired must be at least 1", file=sys.stderr)
        return EXIT_ERROR
    try:
        ra, source_a = load_compare_input(a, history, timeout=timeout)
        rb, source_b = load_compare_input(b, history, timeout=timeout)
    except SabotDataError as exc:
        return _fail(exc, "regress")
    report = detect_regressions(
        ra, rb, a_name=str(a), b_name=str(b), a_source=source_a, b_source=source_b,
        resamples=resamples, seed=seed, min_paired=min_paired,
    )
    if as_json:
        print(report.model_dump_json(indent=2))
    else:
        render_regress(console(width), report)
    return report.exit_code


__all__ = [
    "cmd_history_index",
    "cmd_history_list",
    "cmd_history_resolve",
    "cmd_history_show",
    "cmd_regress",
    "load_compare_input",
]
