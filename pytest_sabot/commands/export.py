"""``sabot export RUN --format html|json [--out FILE]``: a run's offline report or its
results, the run named by its results directory (or results.json) or by its id in the
run history.

* ``json``: results.json of the run, byte for byte when the file on disk still holds it,
  else the copy the history kept when the run was recorded (a later session in the same
  directory replaced the file); to ``--out`` or stdout.
* ``html``: the offline report (:mod:`pytest_sabot.report.html`) of the run's directory,
  to ``--out`` or report.html beside results.json. The report reads the cells' records
  beside results.json, so a run whose results.json was replaced has no report of its own
  any more: it is refused and the json export named instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_sabot.commands import EXIT_ERROR, EXIT_PASS
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.results import RESULTS_FILE


def _located(ref: str, history: Path, timeout: float) -> tuple[Path | None, str, str]:
    """(the run's directory when its results.json still describes it, the results.json
    text, where it was read)."""
    from pytest_sabot.history import load_run_results
    from pytest_sabot.history.queries import resolve_run

    given = Path(ref)
    if given.exists():
        file = given / RESULTS_FILE if given.is_dir() else given
        if not file.is_file():
            raise SabotDataError(file, "", "a results.json written by a scored run "
                                 "(pytest --sabot-wave=N or sabot demo)", "no such file")
        from pytest_sabot.results.compare import load_side

        load_side(file)  # a damaged or foreign file is named before anything is written
        return file.parent, file.read_text(encoding="utf-8"), str(file)
    if not history.exists():
        raise SabotDataError(
            given, "", "a results directory, a results.json, or a run id recorded in the "
            f"history {history}", "no such file, and no history to look the id up in"
        )
    loaded = load_run_results(history, ref, timeout=timeout)
    if loaded.note:  # the history's copy: the directory now holds another session
        return None, loaded.results.model_dump_json(indent=2) + "\n", loaded.source
    out = resolve_run(history, ref, timeout=timeout)
    file = out / RESULTS_FILE
    return out, file.read_text(encoding="utf-8"), str(file)


def cmd_export(args: argparse.Namespace) -> int:
    """0 when exported, 2 when the run cannot be found or read (named on stderr)."""
    from pytest_sabot.history import chosen_history
    from pytest_sabot.history.store import DEFAULT_TIMEOUT_S

    history = chosen_history(getattr(args, "history", None))
    wait = getattr(args, "wait", None)
    directory, text, source = _located(
        args.run, history, DEFAULT_TIMEOUT_S if wait is None else float(wait)
    )
    if args.fmt == "json":
        if args.out is None:
            sys.stdout.write(text)
            return EXIT_PASS
        from pytest_sabot.core.trace_io import write_text_atomic

        write_text_atomic(args.out, text)
        print(f"results of {args.run} (read from {source}) written to {args.out}",
              file=sys.stderr)
        return EXIT_PASS
    if directory is None:
        print(
            f"sabot export: run {args.run} has no report of its own any more: {source} "
            "holds its results, but its directory's results.json and cell records now "
            "belong to a later session (its own records are set aside under superseded/); "
            f"`sabot export {args.run} --format json` gives its results",
            file=sys.stderr,
        )
        return EXIT_ERROR
    from pytest_sabot.report.html import write_results_html

    written = write_results_html(directory, args.out)
    print(f"report of {args.run}: {written}")
    return EXIT_PASS


__all__ = ["cmd_export"]
