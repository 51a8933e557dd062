"""The ``sabot`` command line: offline work on the standard and on recorded waves.

    sabot rescore DIR [--rules VERSION]   re-adjudicate recorded traces (no model calls)
    sabot report DIR                      re-render RESULTS.md, report.html and the summary
    sabot validate [ROOT] [--scenario F]  check cells/, tasks/, mappings/ and lab scenarios
    sabot plan --sabot-wave N [--sabot-model M] [--from DIR]
    sabot schema [OUT_DIR]                write the JSON Schemas of every file format
    sabot compare A B [--json]            paired comparison of two scored runs (directories,
                                          results.json files or run ids of the history)
    sabot regress A B [--json]            exit 1 when a row of B dropped beyond its interval
    sabot history [list|show RUN|index DIR...|resolve RUN]   the local run history
    sabot replay CELL_DIR [--out DIR]     re-execute a recorded cell from its recorded
                                          exchanges (no model) and verify the trace
    sabot inspect CELL_DIR|RUN            one cell's (or a lab run's) timeline
    sabot export RUN --format html|json|junit [--out FILE]   a run's report, results or JUnit
    sabot demo [--out DIR] [--json]       keyless demo: declared outcomes gate the exit code
    sabot lab run SCENARIO --agent A --out DIR   one fault-lab run (exit: its gate)
    sabot lab init DIR | validate FILE...        a starter scenario; check scenario files
    sabot lab campaign FILE --out DIR     every trial of a lab campaign (resumable)
    sabot lab mcp|replay|demo|...         the rest of the fault lab; each run joins the history
    sabot mcp CELL_ID --out DIR           serve one cell (or a lab scenario) over MCP stdio
    sabot merge DIR... --out OUT          combine the shards of a wave into one scored directory
    sabot serve [ROOT] [--read-only]      the local inspector on 127.0.0.1: runs, cells, lab
                                          evidence, comparisons, launches (docs/SERVE.md)

Running a wave is pytest's job: ``pytest --sabot-wave=N``. Exit codes, the same four for
every command (:mod:`pytest_sabot.core.exit_codes`):

    0  pass (replay: reproduction verified)
    1  a gate or a regression: rescore differs from results.json, plan is over the cap,
       demo did not produce a declared outcome, regress found a row that dropped beyond
       its interval, a replay diverged from its recorded trace
    2  configuration, corruption or harness error: bad options, a malformed or missing
       file (validate found errors, results.json does not parse, a damaged recording or
       history), an unwritable output, an unknown run id
    3  inconclusive: the results describe a session that did not record its whole
       selection (interrupted, budget-stopped, required coverage missing), demo could
       not run every declared outcome (a framework is not installed), regress had no
       row with enough paired cells or runs of two registrations, a cell has no recording
       to replay

compare is a report, not a gate: it exits 0 (3 when an input is incomplete, 2 on bad
input) whatever the difference; regress is the gate on a regression.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_sabot.commands.failure import fail
from pytest_sabot.session.options import BY_DEST, OPTIONS

if TYPE_CHECKING:
    SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]


def _add_shared(parser: argparse.ArgumentParser, *dests: str) -> None:
    """Add plugin options to a subcommand, with the plugin's flags and help texts."""
    for dest in dests:
        spec = BY_DEST[dest]
        if spec.kind == "bool":
            parser.add_argument(spec.flag, dest=dest, action="store_true", help=spec.help)
        elif spec.parse is not None:
            parser.add_argument(
                spec.flag, dest=dest, default=spec.default, type=spec.parse, help=spec.help
            )
        else:
            parser.add_argument(spec.flag, dest=dest, default=spec.default, help=spec.help)


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``command`` (a subcommand's name), only that subcommand is
    added, so running one command imports only what its own options need (the help of
    ``sabot`` itself, and an unknown command's error, come from the whole parser)."""
    from pytest_sabot import __version__

    parser = argparse.ArgumentParser(prog="sabot", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--version", action="version", version=f"pytest-sabot {__version__}",
        help="print the version of pytest-sabot and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (add, _runs) in _SUBCOMMANDS.items():
        if command is None or command not in _SUBCOMMANDS or name == command:
            add(sub)
    return parser


def _add_rescore(sub: SubParsers) -> None:
    p = sub.add_parser("rescore", help="re-adjudicate a recorded wave offline")
    p.add_argument("dir", type=Path)
    p.add_argument("--rules", help="rule version to score under (default: the original)")
    p.add_argument(
        "--write",
        action="store_true",
        help="overwrite results.json/RESULTS.md (only when the rules are the same)",
    )
    _add_shared(p, "sabot_root")


def _add_report(sub: SubParsers) -> None:
    p = sub.add_parser("report", help="re-render RESULTS.md and the summary from results.json")
    p.add_argument("dir", type=Path)


def _add_validate(sub: SubParsers) -> None:
    p = sub.add_parser("validate", help="check cells/, tasks/, mappings/ and lab scenarios")
    p.add_argument("root", nargs="?", type=Path)
    p.add_argument("--scenario", action="append", type=Path, metavar="FILE",
                   help="a lab scenario file (or a folder of them) to check as well "
                   "(repeatable); the shipped ones and ROOT/scenarios/ are always checked")
    _add_shared(p, "sabot_adapter")
    p.add_argument("--campaign", action="append", type=Path, metavar="FILE",
                   help="a lab campaign file (or a folder of them) to check as well, with "
                   "the scenarios it names (repeatable); ROOT/campaigns/ is always checked")


def _add_plan(sub: SubParsers) -> None:
    p = sub.add_parser("plan", help="project runs, calls, tokens and cost of a wave")
    _add_shared(
        p,
        "sabot_wave",
        "sabot_model",
        "sabot_root",
        "sabot_budget_usd",
        "sabot_spend_ledger",
        "sabot_prices",
        "sabot_framework",
        "sabot_config",
        "sabot_operator",
        "sabot_task",
        "sabot_seed",
        "sabot_adapter",
    )
    p.add_argument(
        "--from",
        dest="recorded",
        type=Path,
        help="a recorded run directory to take calls and tokens per run from",
    )


def _add_merge(sub: SubParsers) -> None:
    p = sub.add_parser("merge", help="combine shard directories (--sabot-shard) into one")
    p.add_argument("dirs", nargs="+", type=Path, help="the shards' output directories")
    p.add_argument("--out", type=Path, required=True, help="a new directory for the merge")
    p.add_argument("--history", help="the run history to record the merge in (default: the "
                   "output root's, as a session's; 'none' records nothing)")
    _add_shared(p, "sabot_root")


def _add_schema(sub: SubParsers) -> None:
    p = sub.add_parser("schema", help="write JSON Schemas of every file format")
    p.add_argument("out", nargs="?", type=Path, default=Path("schemas"))


def _add_mcp(sub: SubParsers) -> None:
    from pytest_sabot.commands.mcp import add_parser

    add_parser(sub)


def _add_history(sub: SubParsers) -> None:
    from pytest_sabot.commands.history import add_history_parser

    add_history_parser(sub)


def _add_regress(sub: SubParsers) -> None:
    from pytest_sabot.commands.history import add_regress_parser

    add_regress_parser(sub)


def _add_serve(sub: SubParsers) -> None:
    from pytest_sabot.commands.serve import add_parser

    add_parser(sub)


def _add_replay(sub: SubParsers) -> None:
    from pytest_sabot.session.options import seconds

    p = sub.add_parser(
        "replay",
        help="re-execute a recorded cell from its recorded exchanges (no model) and "
        "verify its trace",
    )
    p.add_argument("cell_dir", type=Path, help="a cell's record: <out>/cells/<cell id>")
    p.add_argument(
        "--out", type=Path,
        help="keep the replay's own record here (a new or empty directory; default: a "
        "temporary directory, removed afterwards)",
    )
    p.add_argument("--json", action="store_true", help="print the replay report as JSON")
    p.add_argument("--timeout", type=seconds, default=300.0,
                   help="time limit of the replayed pipeline, in seconds (default 300)")
    _add_shared(p, "sabot_root", "sabot_adapter", "trust_local_agent")


def _add_inspect(sub: SubParsers) -> None:
    from pytest_sabot.commands.history import history_args

    p = sub.add_parser("inspect", help="one cell's timeline (injection, acts, words, verdict), "
                       "or a lab run's (requests, deliveries, effects, observations, faults, "
                       "violations)")
    p.add_argument("cell_dir", metavar="RUN", help="a cell's record (<out>/cells/<cell id>), "
                   "or a lab run: its run.json, its folder or its id in the history")
    p.add_argument("--json", action="store_true", help="print the timeline as JSON")
    _add_shared(p, "sabot_root")
    history_args(p, leaf=False)


def _add_export(sub: SubParsers) -> None:
    from pytest_sabot.commands.history import history_args

    p = sub.add_parser(
        "export", help="a run's report (html), results (json) or JUnit XML (junit), by "
        "directory or run id"
    )
    p.add_argument("run", help="a results directory, a results.json, a lab run's run.json "
                   "(or its folder), or a run id (or a unique prefix) of the history")
    p.add_argument("--format", dest="fmt", choices=("html", "json", "junit"), required=True,
                   help="html: the offline report; json: results.json; junit: the JUnit XML "
                   "of its cells")
    p.add_argument("--out", type=Path, help="the file to write (json default: stdout; "
                   "html default: report.html beside results.json)")
    history_args(p, leaf=False)


def _add_lab(sub: SubParsers) -> None:
    p = sub.add_parser(
        "lab", add_help=False,
        help="the fault lab (python -m pytest_sabot.lab ...); each run it records is added "
        "to the run history ($SABOT_HISTORY, else history.sqlite beside --out)",
    )
    p.add_argument("lab_args", nargs=argparse.REMAINDER)


def _cmd_lab(argv: Sequence[str]) -> int:
    """``sabot lab ...``: the lab's own command line (its options and --help as they are),
    with every run it records (``run``, ``mcp``) added to the run history."""
    from pytest_sabot.commands.lab import main as lab_main

    return lab_main(list(argv), prog="sabot lab", history=True)


def _add_compare(sub: SubParsers) -> None:
    from pytest_sabot.commands.history import history_args

    p = sub.add_parser(
        "compare",
        help="paired comparison of two scored runs or waves (cells matched by framework, "
        "config, operator, task and seed)",
    )
    p.add_argument("a", help="A: run directory, results.json, or a run id (or a unique "
                   "prefix) of the history")
    p.add_argument("b", help="B: run directory, results.json, or a run id (or a unique "
                   "prefix) of the history")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument(
        "--resamples",
        type=int,
        help="bootstrap resamples per row (default 10000)",
    )
    p.add_argument(
        "--seed",
        type=int,
        help="seed of the bootstrap (default 20260723); the same seed gives the same CI",
    )
    history_args(p, leaf=False)


def _add_demo(sub: SubParsers) -> None:
    p = sub.add_parser(
        "demo",
        help="keyless acceptance demo: real cells under sim:vigilant and sim:credulous, "
        "checked against declared outcomes",
    )
    p.add_argument(
        "--out",
        type=Path,
        help="keep traces, results.json and RESULTS.md per persona here (default: discard)",
    )
    p.add_argument("--json", action="store_true", help="print the demo report as JSON")
    p.add_argument(
        "--history",
        help="with --out: the run history each persona's results are recorded in "
        "(default: $SABOT_HISTORY, else history.sqlite in --out; 'none': not recorded)",
    )


_SUBCOMMANDS: dict[str, tuple[Callable[[SubParsers], None], str | None]] = {
    "rescore": (_add_rescore, "rescore:cmd_rescore"),
    "report": (_add_report, "report:cmd_report"),
    "validate": (_add_validate, "validate:cmd_validate"),
    "plan": (_add_plan, "plan:cmd_plan"),
    "merge": (_add_merge, "merge:cmd_merge"),
    "schema": (_add_schema, "schema:cmd_schema"),
    "compare": (_add_compare, "compare:cmd_compare"),
    "demo": (_add_demo, "demo:cmd_demo"),
    "mcp": (_add_mcp, "mcp:cmd_mcp"),
    "history": (_add_history, "history:cmd_history"),
    "regress": (_add_regress, "history:cmd_regress"),
    "replay": (_add_replay, "replay:cmd_replay"),
    "inspect": (_add_inspect, "inspect:cmd_inspect"),
    "export": (_add_export, "export:cmd_export"),
    "lab": (_add_lab, None),
    "serve": (_add_serve, "serve:cmd_serve"),
}
"""Each subcommand: what adds it to the parser, and the ``module:function`` of
pytest_sabot.commands that runs it (the lab runs before parsing), in the order ``sabot
--help`` lists them."""


FAST_EXIT = frozenset({"rescore"})
"""Commands that, run as the program, end the process as soon as they are done: what
they read (a whole wave's verdicts and traces) is not freed object by object, which takes
a tenth of a second, once every file they write is closed and the output is flushed."""


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # run as the program: a reader may close its output early
        from pytest_sabot.commands.closed_stdout import guard_stdout

        guard_stdout()
    given = list(sys.argv[1:] if argv is None else argv)
    code = _main(given, program=argv is None)
    if argv is None:  # an MCP server stopped by a signal: its stdin reader blocks the exit
        from pytest_sabot.commands.closed_stdout import end_if_reader_left

        end_if_reader_left(code)
    return code


def _main(given: list[str], *, program: bool) -> int:
    if given[:1] == ["lab"]:  # everything after it is the lab's
        return _cmd_lab(given[1:])
    args = _parser(given[0] if given else None).parse_args(given)
    try:
        runs = _SUBCOMMANDS[args.command][1]
        assert runs is not None, "the lab is run before the command line is parsed"
        module, name = runs.split(":")  # imported as it runs: `sabot --help` stays light
        handler: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(f"pytest_sabot.commands.{module}"), name)
        code = handler(args)
    except _data_errors() as exc:
        return fail("sabot", exc)
    except _format_errors() as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return fail("sabot", f"a file does not have the expected format: {first}")
    if program and args.command in FAST_EXIT:
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    from pytest_sabot.commands.closed_stdout import exit_now

    exit_now(code)


def _data_errors() -> tuple[type[Exception], ...]:
    """What a command fails with on bad input or an unusable output (imported only when a
    command raised: an ``except`` clause's classes are looked up as it is reached)."""
    from pytest_sabot.core.errors import SabotDataError
    from pytest_sabot.core.records import OutputInUse

    return (SabotDataError, KeyError, OSError, OutputInUse)


def _format_errors() -> tuple[type[Exception], ...]:
    """A file that does not parse, or does not have its format's fields."""
    import json

    from pydantic import ValidationError

    return (ValidationError, json.JSONDecodeError)


__all__ = ["OPTIONS", "main"]


if __name__ == "__main__":
    sys.exit(main())
