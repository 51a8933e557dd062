"""``sabot history`` and ``sabot regress`` (and ``python -m pytest_sabot.history``), and the
history's recording of the runs the ``sabot`` commands make themselves (``sabot demo
--out``, ``sabot lab run``).

    sabot history [list] [--limit N] [--json]     the runs, newest first
    sabot history show RUN [--json]               one run: its fields, rows and cells
    sabot history index DIR... [--json]           (re)build the history from the records
    sabot history resolve RUN                     the output directory of a run
    sabot regress A B [--json] [--min-paired N]   exit 1 when B regressed from A

The history read is ``--history``, else ``$SABOT_HISTORY``, else
``reports/history.sqlite``; ``index`` without ``--history`` writes to the output root's
history. RUN, A and B are run ids or unique prefixes of one; A and B may also be run
directories or results.json files. Each command returns an exit code of
:mod:`pytest_sabot.core.exit_codes` (0 pass, 1 a regression, 2 configuration, corruption
or a locked history, 3 inconclusive; SPEC I43).

``python -m pytest_sabot.history [--history F] list|show|index|resolve|regress ...`` is the
same commands under one parser (:func:`main`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_sabot.commands.closed_stdout import guard_if_program
from pytest_sabot.commands.failure import fail
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.exit_codes import EXIT_ERROR, EXIT_PASS
from pytest_sabot.session.options import positive_int, seconds

if TYPE_CHECKING:
    from pytest_sabot.history.sources import LabRun, ResultsFile

    SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]

OFF = "none"


# --------------------------------------------------------------------------- the commands


def _timeout(given: float | None) -> float:
    """The seconds to wait for another writer of the history: ``given``, else 15."""
    from pytest_sabot.history.store import DEFAULT_TIMEOUT_S

    return DEFAULT_TIMEOUT_S if given is None else given


def history_list(
    history: Path,
    *,
    limit: int | None = None,
    as_json: bool = False,
    width: int | None = None,
    timeout: float | None = None,
) -> int:
    """``sabot history``: the runs, newest first, fitted to the terminal's width."""
    from pytest_sabot.history.queries import count_runs, list_runs
    from pytest_sabot.history.render import console, render_list

    try:
        summaries = list_runs(history, limit=limit, timeout=_timeout(timeout))
        held = (count_runs(history, timeout=_timeout(timeout))
                if limit is not None and len(summaries) == limit else None)
    except SabotDataError as exc:
        return fail("sabot history", exc)
    if as_json:
        print("[" + ",\n".join(s.model_dump_json(indent=2) for s in summaries) + "]")
    else:
        render_list(console(width), summaries, str(history), held)
    return EXIT_PASS


def history_show(
    history: Path,
    ref: str,
    *,
    as_json: bool = False,
    width: int | None = None,
    timeout: float | None = None,
) -> int:
    """``sabot history show RUN``: one run by id or unique prefix."""
    from pytest_sabot.history.queries import show_run
    from pytest_sabot.history.render import console, render_show

    try:
        detail = show_run(history, ref, timeout=_timeout(timeout))
    except SabotDataError as exc:
        return fail("sabot history show", exc)
    if as_json:
        print(detail.model_dump_json(indent=2))
    else:
        render_show(console(width), detail)
    return EXIT_PASS


def history_index(
    history: Path | None,
    dirs: Sequence[Path],
    *,
    as_json: bool = False,
    width: int | None = None,
    timeout: float | None = None,
) -> int:
    """``sabot history index DIR...``: add every session found under each DIR. Exit 2
    when a record could not be indexed (each is named), 0 otherwise."""
    from pytest_sabot.history.record import index_output
    from pytest_sabot.history.render import console, render_index

    problems = 0
    out = console(width)
    for directory in dirs:
        try:
            report = index_output(directory, history, timeout=_timeout(timeout))
        except SabotDataError as exc:
            return fail("sabot history index", exc)
        problems += len(report.problems)
        if as_json:
            print(report.model_dump_json(indent=2))
        else:
            render_index(out, report)
    return EXIT_ERROR if problems else EXIT_PASS


def history_resolve(history: Path, ref: str, *, timeout: float | None = None) -> int:
    """``sabot history resolve RUN``: print the run's output directory."""
    from pytest_sabot.history.queries import resolve_run

    try:
        print(resolve_run(history, ref, timeout=_timeout(timeout)))
    except SabotDataError as exc:
        return fail("sabot history resolve", exc)
    return EXIT_PASS


def regress(
    history: Path,
    a: str,
    b: str,
    *,
    as_json: bool = False,
    resamples: int | None = None,
    seed: int | None = None,
    min_paired: int | None = None,
    width: int | None = None,
    timeout: float | None = None,
) -> int:
    """``sabot regress A B``: 1 when a row of B dropped beyond its interval from A, 0
    when none did, 3 when the runs are of different registrations or no row has enough
    paired cells, 2 on bad input."""
    from pytest_sabot.history.queries import load_compare_input
    from pytest_sabot.history.regress import DEFAULT_MIN_PAIRED, detect_regressions
    from pytest_sabot.history.render import console, render_regress
    from pytest_sabot.results.compare import DEFAULT_RESAMPLES, DEFAULT_SEED

    resamples = DEFAULT_RESAMPLES if resamples is None else resamples
    min_paired = DEFAULT_MIN_PAIRED if min_paired is None else min_paired
    if resamples < 1 or min_paired < 1:
        return fail("sabot regress", "--resamples and --min-paired must be at least 1")
    wait = _timeout(timeout)
    try:
        ra, source_a = load_compare_input(a, history, timeout=wait)
        rb, source_b = load_compare_input(b, history, timeout=wait)
    except SabotDataError as exc:
        return fail("sabot regress", exc)
    report = detect_regressions(
        ra, rb, a_name=str(a), b_name=str(b), a_source=source_a, b_source=source_b,
        resamples=resamples, seed=DEFAULT_SEED if seed is None else seed,
        min_paired=min_paired,
    )
    if as_json:
        print(report.model_dump_json(indent=2))
    else:
        render_regress(console(width), report)
    return report.exit_code


# --------------------------------------------------------------------------- command line


def history_args(p: argparse.ArgumentParser, leaf: bool = True) -> None:
    """--history and --wait; on a subcommand's own parser their default leaves what was
    given before the subcommand (``sabot history --history F list``) in place."""
    p.add_argument(
        "--history",
        default=argparse.SUPPRESS if leaf else None,
        help="the run history file (default: $SABOT_HISTORY, else reports/history.sqlite)",
    )
    p.add_argument(
        "--wait",
        type=seconds,
        default=argparse.SUPPRESS if leaf else None,
        help="seconds to wait for another process writing the history (default 15)",
    )


def _history_commands(sub: SubParsers) -> None:
    s = sub.add_parser("list", help="the runs, newest first")
    s.add_argument("--limit", type=positive_int, help="the newest N runs only")
    s.add_argument("--json", action="store_true", help="print JSON")
    history_args(s)
    s = sub.add_parser("show", help="one run: its fields, scoreboard rows and cells")
    s.add_argument("run", help="run id, or a unique prefix of one")
    s.add_argument("--json", action="store_true", help="print JSON")
    history_args(s)
    s = sub.add_parser("index", help="(re)build the history from the records on disk")
    s.add_argument("dirs", nargs="+", type=Path, help="output directories or output roots")
    s.add_argument("--json", action="store_true", help="print JSON")
    history_args(s)
    s = sub.add_parser("resolve", help="print the output directory of a run")
    s.add_argument("run", help="run id, or a unique prefix of one")
    history_args(s)


def _regress_parser(sub: SubParsers, leaf: bool) -> None:
    from pytest_sabot.history.regress import DEFAULT_MIN_PAIRED
    from pytest_sabot.results.compare import DEFAULT_RESAMPLES, DEFAULT_SEED

    p = sub.add_parser(
        "regress",
        help="exit 1 when a row of B dropped beyond its interval from A (runs of one "
        "registration)",
    )
    p.add_argument("a", help="reference: run id (or prefix), run directory or results.json")
    p.add_argument("b", help="run under test: run id (or prefix), run directory or "
                   "results.json")
    p.add_argument("--json", action="store_true", help="print the check as JSON")
    p.add_argument("--resamples", type=positive_int, default=DEFAULT_RESAMPLES,
                   help=f"bootstrap resamples per row (default {DEFAULT_RESAMPLES})")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED,
                   help=f"bootstrap seed (default {DEFAULT_SEED})")
    p.add_argument("--min-paired", type=positive_int, default=DEFAULT_MIN_PAIRED,
                   help="paired cells a row needs to be tested (default "
                   f"{DEFAULT_MIN_PAIRED})")
    history_args(p, leaf=leaf)


def add_parsers(sub: SubParsers) -> None:
    """``sabot history`` (with its subcommands) and ``sabot regress``."""
    add_history_parser(sub)
    add_regress_parser(sub)


def add_regress_parser(sub: SubParsers) -> None:
    """``sabot regress``."""
    _regress_parser(sub, leaf=False)


def add_history_parser(sub: SubParsers) -> None:
    """``sabot history`` with its subcommands."""
    p = sub.add_parser(
        "history",
        help="the local run history: list runs (the default), show one, index records",
        description="The local run history (docs/HISTORY.md). Without a subcommand: the "
        "runs, newest first.",
    )
    history_args(p, leaf=False)
    _history_commands(p.add_subparsers(dest="history_command"))


def module_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m pytest_sabot.history``: the history's subcommands and
    ``regress`` under one program."""
    p = argparse.ArgumentParser(
        prog="python -m pytest_sabot.history",
        description="The local run history: list, show, index, resolve, regress.",
    )
    history_args(p, leaf=False)
    sub = p.add_subparsers(dest="history_command", required=True)
    _history_commands(sub)
    _regress_parser(sub, leaf=True)
    return p


def _wait(args: argparse.Namespace) -> float | None:
    wait = getattr(args, "wait", None)
    return None if wait is None else float(wait)


def cmd_history(args: argparse.Namespace) -> int:
    """``sabot history [list|show|index|resolve]``; a bare ``sabot history`` lists."""
    from pytest_sabot.history.store import chosen_history

    what = getattr(args, "history_command", None) or "list"
    given = getattr(args, "history", None)
    wait = _wait(args)
    as_json = bool(getattr(args, "json", False))
    if what == "index":
        return history_index(Path(given) if given else None, args.dirs, as_json=as_json,
                             timeout=wait)
    history = chosen_history(given)
    if what == "show":
        return history_show(history, args.run, as_json=as_json, timeout=wait)
    if what == "resolve":
        return history_resolve(history, args.run, timeout=wait)
    return history_list(history, limit=getattr(args, "limit", None), as_json=as_json,
                        timeout=wait)


def cmd_regress(args: argparse.Namespace) -> int:
    """``sabot regress A B``: 1 when a row of B dropped beyond its interval from A."""
    from pytest_sabot.history.store import chosen_history

    return regress(
        chosen_history(getattr(args, "history", None)), args.a, args.b, as_json=args.json,
        resamples=args.resamples, seed=args.seed, min_paired=args.min_paired,
        timeout=_wait(args),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pytest_sabot.history ...``."""
    guard_if_program(argv)
    args = module_parser().parse_args(argv)
    if args.history_command == "regress":
        return cmd_regress(args)
    return cmd_history(args)


# --------------------------------------------------------------------------- recording


def history_for(out_dir: Path, explicit: str | Path | None = None) -> Path | None:
    """Where a run written to ``out_dir`` is recorded: ``explicit`` (a --history option),
    else ``$SABOT_HISTORY``, else the output root's ``history.sqlite``; None when the
    choice is ``none``."""
    from pytest_sabot.history.store import HISTORY_ENV, default_history_path

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
    path = history_for(out_dir, explicit)
    if path is None:
        return ""
    later = (f"its files are intact, add it later with `sabot history --history {path} "
             f"index {out_dir}`")
    try:
        from pytest_sabot.history.record import record_session

        done = record_session(path, out_dir, results, None)
    except SabotDataError as exc:
        return f"history: {out_dir} is not recorded: {exc}; {later}"
    except Exception as exc:  # the history must never cost a run its files or its exit
        return f"history: {out_dir} is not recorded ({type(exc).__name__}: {exc}); {later}"
    return f"history: run {done.run_id} {done.action} in {path}"


__all__ = [
    "add_history_parser",
    "add_parsers",
    "add_regress_parser",
    "cmd_history",
    "cmd_regress",
    "history_args",
    "history_for",
    "history_index",
    "history_list",
    "history_resolve",
    "history_show",
    "main",
    "module_parser",
    "record_results",
    "regress",
]
