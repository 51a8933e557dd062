"""The ``sabot`` command line: offline work on the standard and on recorded waves.

    sabot rescore DIR [--rules VERSION]   re-adjudicate recorded traces (no model calls)
    sabot report DIR                      re-render RESULTS.md, report.html and the summary
    sabot validate [ROOT]                 check cells/, tasks/ and mappings/ files
    sabot plan --sabot-wave N [--sabot-model M] [--from DIR]
    sabot schema [OUT_DIR]                write the JSON Schemas of every file format
    sabot compare A B [--json]            paired comparison of two scored runs or waves
    sabot demo [--out DIR] [--json]       keyless demo: declared outcomes gate the exit code
    sabot merge DIR... --out OUT          combine the shards of a wave into one scored directory

Running a wave is pytest's job: ``pytest --sabot-wave=N``. Exit codes, the same four for
every command:

    0  pass
    1  a gate or a regression: rescore differs from results.json, plan is over the cap,
       demo did not produce a declared outcome
    2  configuration, corruption or harness error: bad options, a malformed or missing
       file (validate found errors, results.json does not parse), an unwritable output
    3  inconclusive: the results describe a session that did not record its whole
       selection (interrupted, budget-stopped, required coverage missing)

compare exits 0 whatever the difference (2 on bad input).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import ValidationError

from pytest_sabot.commands import EXIT_ERROR, EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_PASS
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.session.options import BY_DEST, OPTIONS


def _add_shared(parser: argparse.ArgumentParser, *dests: str) -> None:
    """Add plugin options to a subcommand, with the plugin's flags and help texts."""
    for dest in dests:
        spec = BY_DEST[dest]
        if spec.parse is not None:
            parser.add_argument(
                spec.flag, dest=dest, default=spec.default, type=spec.parse, help=spec.help
            )
        else:
            parser.add_argument(spec.flag, dest=dest, default=spec.default, help=spec.help)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sabot", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("rescore", help="re-adjudicate a recorded wave offline")
    p.add_argument("dir", type=Path)
    p.add_argument("--rules", help="rule version to score under (default: the original)")
    p.add_argument(
        "--write",
        action="store_true",
        help="overwrite results.json/RESULTS.md (only when the rules are the same)",
    )
    _add_shared(p, "sabot_root")
    p = sub.add_parser("report", help="re-render RESULTS.md and the summary from results.json")
    p.add_argument("dir", type=Path)
    p = sub.add_parser("validate", help="check cells/, tasks/ and mappings/")
    p.add_argument("root", nargs="?", type=Path)
    p = sub.add_parser("plan", help="project runs, calls, tokens and cost of a wave")
    _add_shared(
        p,
        "sabot_wave",
        "sabot_model",
        "sabot_root",
        "sabot_budget_usd",
        "sabot_spend_ledger",
        "sabot_framework",
        "sabot_config",
        "sabot_operator",
        "sabot_task",
    )
    p.add_argument(
        "--from",
        dest="recorded",
        type=Path,
        help="a recorded run directory to take calls and tokens per run from",
    )
    p = sub.add_parser("merge", help="combine shard directories (--sabot-shard) into one")
    p.add_argument("dirs", nargs="+", type=Path, help="the shards' output directories")
    p.add_argument("--out", type=Path, required=True, help="a new directory for the merge")
    _add_shared(p, "sabot_root")
    p = sub.add_parser("schema", help="write JSON Schemas of every file format")
    p.add_argument("out", nargs="?", type=Path, default=Path("schemas"))
    _add_compare_demo(sub)
    return parser


def _add_compare_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compare",
        help="paired comparison of two scored runs or waves (cells matched by framework, "
        "config, operator, task and seed)",
    )
    p.add_argument("a", type=Path, help="run directory (or results.json) A")
    p.add_argument("b", type=Path, help="run directory (or results.json) B")
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


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A command of its own module, imported when it runs (``sabot --help`` stays light)."""

    def run(args: argparse.Namespace) -> int:
        handler: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(f"pytest_sabot.commands.{module}"), name
        )
        return handler(args)

    return run


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        handler = {
            "rescore": cmd_rescore,
            "report": cmd_report,
            "validate": _command("validate", "cmd_validate"),
            "plan": _command("plan", "cmd_plan"),
            "schema": _command("schema", "cmd_schema"),
            "compare": _command("compare", "cmd_compare"),
            "demo": _command("demo", "cmd_demo"),
            "merge": _command("merge", "cmd_merge"),
        }[args.command]
        return handler(args)
    except (SabotDataError, KeyError, OSError) as exc:
        print(f"sabot: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except (ValidationError, json.JSONDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"sabot: a file does not have the expected format: {first}", file=sys.stderr)
        return EXIT_ERROR


def read_results_of(path: Path) -> object:
    """results.json of a directory, with a clear error when it is missing or not ours."""
    from pytest_sabot.results import RESULTS_FILE, RESULTS_SCHEMA_VERSION, read_results

    file = path / RESULTS_FILE if path.is_dir() else path
    if not file.is_file():
        raise SabotDataError(file, "", "a results.json written by pytest --sabot-wave")
    raw = json.loads(file.read_text(encoding="utf-8"))
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if version != RESULTS_SCHEMA_VERSION:
        raise SabotDataError(
            file, "schema_version", f"{RESULTS_SCHEMA_VERSION} (this pytest-sabot's format)",
            version,
        )
    return read_results(file)


def rebuild(original: object, directory: Path, rules: str, root: str | None) -> object:
    """results.json built again from the records in ``directory``, with the inputs the
    original recorded (selection, session, model, judge): offline, no model call."""
    from pytest_sabot.core.model_spec import parse_model
    from pytest_sabot.matrix.standard import load_standard
    from pytest_sabot.results import ResultsFile, build_results
    from pytest_sabot.results.adjudicate import Provenance

    assert isinstance(original, ResultsFile)
    std = load_standard(original.wave, root, rules=rules)
    sel = original.selection
    reasons = {n.cell_id: (n.reason, n.detail) for n in sel.not_run}
    return build_results(
        std,
        directory,
        selected_ids=sel.cell_ids or [c.cell_id for c in original.cells] + sel.missing
        + original.structural_zeros,
        pulled_in=sel.pulled_in,
        model=parse_model(original.model),
        upstream=original.upstream,
        downgrade_model=original.downgrade_model,
        judge_spec=original.judge_spec,
        judge=original.judge,
        spend=original.spend,
        extensions=original.extensions,
        session=original.session,
        provenance=Provenance(original.model, original.registration_hash, original.rules),
        not_run=reasons,
        counted=original.counted,
        keyword=sel.keyword,
        markexpr=sel.markexpr,
        filters=sel.filters,
    )


def cmd_rescore(args: argparse.Namespace) -> int:
    from pytest_sabot.core.trace_io import write_text_atomic
    from pytest_sabot.report.render import markdown, scoreboard_lines
    from pytest_sabot.results import ResultsFile, write_results

    original = read_results_of(args.dir)
    assert isinstance(original, ResultsFile)
    rules = args.rules or original.rules
    fresh = rebuild(original, args.dir, rules, args.sabot_root)
    assert isinstance(fresh, ResultsFile)
    same_rules = rules == original.rules
    if same_rules:
        identical = fresh.model_dump(mode="json") == original.model_dump(mode="json")
        print(
            f"rescored {len(fresh.cells)} cells under {rules}: "
            + ("identical to results.json" if identical else "DIFFERS from results.json")
        )
        for line in scoreboard_lines(fresh):
            print(line)
        if fresh.status_line:
            print(fresh.status_line)
        if args.write:
            write_results(fresh, args.dir)
            write_text_atomic(args.dir / "RESULTS.md", markdown(fresh))
        if not identical and not args.write:
            return EXIT_GATE
        return EXIT_INCONCLUSIVE if fresh.status_line else EXIT_PASS
    print(f"both readings: {original.rules} (as recorded) and {rules} (rescored)")
    print(side_by_side(original, fresh))
    return EXIT_INCONCLUSIVE if fresh.status_line else EXIT_PASS


def side_by_side(a: object, b: object) -> str:
    """Per row: Sabot Score under the original rules next to the rescored one."""
    from pytest_sabot.report.render import pct
    from pytest_sabot.results import ResultsFile

    assert isinstance(a, ResultsFile) and isinstance(b, ResultsFile)
    rows_b = {r.row: r for r in b.scoreboard.rows}
    lines = [f"{'row':<20}{a.rules:>12}{b.rules:>12}{'valid':>8}"]
    for row in a.scoreboard.rows:
        other = rows_b.get(row.row)
        lines.append(
            f"{row.row:<20}{pct(row.sabot_score.value):>12}"
            f"{pct(other.sabot_score.value if other else None):>12}"
            f"{row.valid:>5}/{other.valid if other else 0}"
        )
    return "\n".join(lines)


def cmd_report(args: argparse.Namespace) -> int:
    from pytest_sabot.core.trace_io import write_text_atomic
    from pytest_sabot.report.render import markdown, summary_lines
    from pytest_sabot.results import ResultsFile

    results = read_results_of(args.dir)
    assert isinstance(results, ResultsFile)
    write_text_atomic(args.dir / "RESULTS.md", markdown(results))
    for line in summary_lines(results):
        print(line)
    from pytest_sabot.report.html import write_results_html

    print(f"report: {write_results_html(args.dir)}")
    return EXIT_INCONCLUSIVE if results.status_line else EXIT_PASS


__all__ = ["OPTIONS", "main"]
