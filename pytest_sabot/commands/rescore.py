"""``sabot rescore DIR [--rules VERSION] [--write]``: re-adjudicate a recorded wave offline.

results.json is built again from the records in DIR with the inputs the original recorded
(no model call); a board kept apart (DIR/slices/<run id>, DIR/readings/<rules>) is built
from the records of the directory it sits in. Under the original rules the result must be
identical: exit 0 (3 when the session did not record its whole selection), 1 when it
differs (each difference named; ``--write`` replaces results.json and RESULTS.md instead),
2 for a damaged record. Under
other rules both readings are printed side by side (exit 0, or 3, or 2 as above).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_sabot.commands.results_dir import read_results_of, records_home, writing
from pytest_sabot.core.exit_codes import EXIT_ERROR, EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_PASS

if TYPE_CHECKING:
    from pytest_sabot.results import ResultsFile


def rebuild(original: ResultsFile, directory: Path, rules: str, root: str | None) -> ResultsFile:
    """results.json built again from the records in ``directory``, with the inputs the
    original recorded (selection, session, model, judge, the package versions the records
    were made with): offline, no model call. The matrix is the one the session ran, with
    its adapters as its manifest records them when they are not installed here."""
    from pytest_sabot.results.rebuild import rebuild as rebuilt
    from pytest_sabot.results.recorded import session_standard

    session = original.session.run_id if original.session is not None else None
    with session_standard(
        directory, original.wave, session=session, root=root, rules=rules
    ) as std:
        # Offline, each cell's record is read and scored on its own: one process per core.
        return rebuilt(original, std, directory, processes=None)


def cmd_rescore(args: argparse.Namespace) -> int:
    from pytest_sabot.report.terminal import console, print_summary

    original = read_results_of(args.dir)
    rules = args.rules or original.rules
    home = records_home(args.dir)  # a slice's or a reading's board scores its directory's
    try:
        fresh = rebuild(original, home, rules, args.sabot_root)
    except KeyError as exc:  # a rule version the standard does not register
        if args.rules is None or "unknown rule version" not in str(exc):
            raise
        from pytest_sabot.commands.failure import fail

        return fail("sabot rescore", f"--rules: expected a registered rule version, got "
                    f"{args.rules!r} ({exc.args[0] if exc.args else exc})")
    same_rules = rules == original.rules
    if original.scoreboard.registered_rows is None:  # written before the field existed
        fresh = fresh.model_copy(update={
            "scoreboard": fresh.scoreboard.model_copy(update={"registered_rows": None})})
    if original.outside_row is None:  # written before the field existed (SPEC I158)
        fresh = fresh.model_copy(update={"outside_row": None})
    if original.flags_protocol is None:  # written before the field existed
        fresh = fresh.model_copy(update={"flags_protocol": None})
    if (original.scoreboard.band is not None and fresh.scoreboard.band is None
            and original.scoreboard.median_sabot_score == fresh.scoreboard.median_sabot_score):
        # A partial board written before results.json withheld its band (SPEC I91): the
        # same median, read as the file reads it.
        fresh = fresh.model_copy(update={
            "scoreboard": fresh.scoreboard.model_copy(
                update={"band": original.scoreboard.band})})
    damaged = [n for n in fresh.selection.not_run if n.reason == "damaged record"]
    for n in damaged:
        print(f"damaged record: cell {n.cell_id}: {n.detail}", file=sys.stderr)
    if same_rules:
        identical = fresh.model_dump(mode="json") == original.model_dump(mode="json")
        print(
            f"rescored {len(fresh.cells)} cells under {rules}: "
            + ("identical to results.json" if identical else "DIFFERS from results.json")
        )
        if not identical:
            from pytest_sabot.results.drift import drift

            for line in drift(original, fresh):
                print(f"  {line}")
        sys.stdout.flush()
        print_summary(console(), fresh)
        if fresh.status_line:
            print(fresh.status_line)
        lost = sorted({c.cell_id for c in original.cells} - {c.cell_id for c in fresh.cells})
        if args.write and lost:  # never trade a recorded verdict for a missing one
            shown = ", ".join(lost[:5]) + (", ..." if len(lost) > 5 else "")
            print(
                f"sabot rescore: results.json is not rewritten: {len(lost)} cell(s) it holds "
                f"a verdict for have no usable record now ({shown}); nothing was written. "
                "`pytest --sabot-resume` sets a damaged record aside and runs its cell again",
                file=sys.stderr,
            )
            return EXIT_ERROR
        if args.write:  # what writes the files is imported only to write them
            from pytest_sabot.core.trace_io import write_text_atomic
            from pytest_sabot.report.render import markdown
            from pytest_sabot.results import write_results

            with writing(home, "sabot rescore --write"):
                write_results(fresh, args.dir)
                write_text_atomic(args.dir / "RESULTS.md", markdown(fresh))
        if damaged:
            return EXIT_ERROR
        if not identical and not args.write:
            return EXIT_GATE
        return EXIT_INCONCLUSIVE if fresh.status_line else EXIT_PASS
    print(f"both readings: {original.rules} (as recorded) and {rules} (rescored)")
    print(fresh.label)  # keyless: fixtures of the embedded model, as every output says
    sys.stdout.flush()
    side_by_side(original, fresh)
    if damaged:
        return EXIT_ERROR
    return EXIT_INCONCLUSIVE if fresh.status_line else EXIT_PASS


def side_by_side(a: ResultsFile, b: ResultsFile) -> None:
    """Per row: Sabot Score under the original rules next to the rescored one, fitted to
    the terminal (``report.terminal.side_by_side``)."""
    from pytest_sabot.report.terminal import console
    from pytest_sabot.report.terminal import side_by_side as table

    table(a, b, console())


__all__ = ["cmd_rescore", "rebuild", "side_by_side"]
