"""``python -m pytest_sabot.report.html PATH [PATH_B] [--out FILE] [--layout ...]``

One path: a results directory (report.html beside results.json) or a lab run (run.json or
its directory; report.html beside it). Two paths: the paired comparison of two results
directories (compare.html in the second). Prints the path written; bad input exits 2 with
the file, the field and what was expected.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from pytest_sabot.core.errors import SabotDataError, from_validation_error


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pytest_sabot.report.html",
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
    from pytest_sabot.report.html import LAB_RUN_FILE, RESULTS_FILE

    if path.is_file():
        return path.name != RESULTS_FILE and path.suffix == ".json" and (
            path.name == LAB_RUN_FILE or not (path.parent / RESULTS_FILE).is_file()
        )
    return (path / LAB_RUN_FILE).is_file() and not (path / RESULTS_FILE).is_file()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
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
        print(f"sabot report: {exc}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        print(f"sabot report: {from_validation_error(args.path, exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"sabot report: {exc.filename or args.out}: {exc.strerror}", file=sys.stderr)
        return 2
    print(written)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
