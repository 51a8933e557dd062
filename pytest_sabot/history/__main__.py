"""``python -m pytest_sabot.history``: the run history's commands.

    python -m pytest_sabot.history [--history FILE] list [--limit N] [--json]
    python -m pytest_sabot.history [--history FILE] show RUN [--json]
    python -m pytest_sabot.history [--history FILE] index DIR [DIR ...] [--json]
    python -m pytest_sabot.history [--history FILE] resolve RUN
    python -m pytest_sabot.history [--history FILE] regress A B [--json] [--min-paired N]

The history is ``--history``, else ``$SABOT_HISTORY``, else ``reports/history.sqlite``
(for ``index`` without ``--history``: the output root's ``history.sqlite``). RUN, A and B
are run ids or unique prefixes of one; A and B may also be run directories or
results.json files. Exit codes: 0 pass, 1 regression, 2 configuration, corruption or a
locked history, 3 inconclusive.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_sabot.history.commands import (
    cmd_history_index,
    cmd_history_list,
    cmd_history_resolve,
    cmd_history_show,
    cmd_regress,
)
from pytest_sabot.history.regress import DEFAULT_MIN_PAIRED
from pytest_sabot.history.store import DEFAULT_TIMEOUT_S, chosen_history
from pytest_sabot.results.compare import DEFAULT_RESAMPLES, DEFAULT_SEED


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more seconds, got {value}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pytest_sabot.history",
        description="The local run history: list, show, index, resolve, regress.",
    )
    p.add_argument("--history", help="the history file (default: $SABOT_HISTORY, else "
                   "reports/history.sqlite)")
    p.add_argument("--wait", type=_seconds, default=DEFAULT_TIMEOUT_S,
                   help=f"seconds to wait for another writer (default {DEFAULT_TIMEOUT_S:g})")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("list", help="the runs, newest first")
    s.add_argument("--limit", type=_positive, help="show the newest N runs only")
    s.add_argument("--json", action="store_true", help="print JSON")
    s = sub.add_parser("show", help="one run: session fields, rows and cells")
    s.add_argument("run", help="run id or a unique prefix of one")
    s.add_argument("--json", action="store_true", help="print JSON")
    s = sub.add_parser("index", help="(re)build the history from the records on disk")
    s.add_argument("dirs", nargs="+", type=Path, help="output directories or output roots")
    s.add_argument("--json", action="store_true", help="print JSON")
    s = sub.add_parser("resolve", help="print the output directory of a run")
    s.add_argument("run", help="run id or a unique prefix of one")
    s = sub.add_parser("regress", help="exit 1 when B regressed from A (same registration)")
    s.add_argument("a", help="reference: run id, prefix, run directory or results.json")
    s.add_argument("b", help="run under test: run id, prefix, run directory or results.json")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.add_argument("--resamples", type=_positive, default=DEFAULT_RESAMPLES,
                   help=f"bootstrap resamples per row (default {DEFAULT_RESAMPLES})")
    s.add_argument("--seed", type=int, default=DEFAULT_SEED,
                   help=f"bootstrap seed (default {DEFAULT_SEED})")
    s.add_argument("--min-paired", type=_positive, default=DEFAULT_MIN_PAIRED,
                   help="paired cells a row needs to be tested (default "
                   f"{DEFAULT_MIN_PAIRED})")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    wait = args.wait
    if args.command == "index":
        explicit = Path(args.history) if args.history else None
        return cmd_history_index(explicit, args.dirs, as_json=args.json, timeout=wait)
    history = chosen_history(args.history)
    if args.command == "list":
        return cmd_history_list(history, limit=args.limit, as_json=args.json, timeout=wait)
    if args.command == "show":
        return cmd_history_show(history, args.run, as_json=args.json, timeout=wait)
    if args.command == "resolve":
        return cmd_history_resolve(history, args.run, timeout=wait)
    return cmd_regress(
        history, args.a, args.b, as_json=args.json, resamples=args.resamples,
        seed=args.seed, min_paired=args.min_paired, timeout=wait,
    )


if __name__ == "__main__":
    sys.exit(main())
