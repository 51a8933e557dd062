"""``sabot report DIR`` and ``python -m pytest_sabot.report.html``: rendering again from the
records, never from a model.

``sabot report DIR`` re-renders RESULTS.md, report.html and the terminal summary from
results.json (exit 0, 3 when the session did not record its whole selection, 2 on bad
input). ``python -m pytest_sabot.report.html PATH [PATH_B] [--out FILE] [--layout ...]``
writes one HTML report: given one path, of a results directory (report.html beside
results.json) or of a lab run (run.json or its directory; report.html beside it); given
two, the paired comparison of two results directories (compare.html in the second). It
prints the path written; bad input exits 2 with the file, the field and what was expected.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from pytest_sabot.commands.closed_stdout import guard_if_program
from pytest_sabot.commands.failure import fail
from pytest_sabot.commands.results_dir import read_results_of, writing
from pytest_sabot.core.errors import SabotDataError, from_validation_error
from pytest_sabot.core.exit_codes import EXIT_INCONCLUSIVE, EXIT_PASS


def cmd_report(args: argparse.Namespace) -> int:
    """``sabot report DIR``."""
    from rich.text import Text

    from pytest_sabot.core.trace_io import write_text_atomic
    from pytest_sabot.report.html import write_results_html
    from pytest_sabot.report.render import markdown
    from pytest_sabot.report.terminal import console, print_summary

    results = read_results_of(args.dir)
    with writing(args.dir, "sabot report"):
        write_text_atomic(args.dir / "RESULTS.md", markdown(results))
        print_summary(console(), results)
        html = write_results_html(args.dir)
    console().print(Text(f"report: {html}"))
    return EXIT_INCONCLUSIVE if results.status_line else EXIT_PASS


# --------------------------------------------------------------------------- the HTML report


HTML_PROG = "python -m pytest_sabot.report.html"


def html_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=HTML_PROG,
        description="Write the offline HTML report of a results directory, a lab run, or "
        "the comparison of two results directories.",
    )
    p.add_argument("path", type=Path, help="results directory, or lab run.json / its folder")
    p.add_argument("path_b", type=Path, nargs="?",
                   help="a second results directory: write the paired comparison A -> B")
    p.add_argument("--out", type=Path, help="file to write (default: beside the input)")
    p.add_argument(
        "--layout", choices=("auto", "inline", "pages"), default="auto",
        help="cell drill-downs inside report.html (inline) or one page each in a folder "
        "beside it (pages); auto: inline up to 120 cells",
    )
    return p


def _is_lab(path: Path) -> bool:
    from pytest_sabot.commands.lab_refs import is_lab_path

    return is_lab_path(path)


def html_main(argv: Sequence[str] | None = None) -> int:
    """``python -m pytest_sabot.report.html ...``: the path written, or exit 2."""
    guard_if_program(argv)
    args = html_parser().parse_args(argv)
    from pytest_sabot.report.html import write_compare_html, write_lab_html, write_results_html

    try:
        if args.path_b is not None:
            written = write_compare_html(args.path, args.path_b, args.out)
        elif _is_lab(args.path):
            written = write_lab_html(args.path, args.out)
        else:
            results_dir = args.path.parent if args.path.is_file() else args.path
            written = write_results_html(results_dir, args.out, layout=args.layout)
    except SabotDataError as exc:
        return fail(HTML_PROG, exc)
    except ValidationError as exc:
        return fail(HTML_PROG, from_validation_error(args.path, exc))
    except OSError as exc:
        return fail(HTML_PROG, f"{exc.filename or args.out}: {exc.strerror}")
    print(written)
    return EXIT_PASS


__all__ = ["cmd_report", "html_main", "html_parser"]
