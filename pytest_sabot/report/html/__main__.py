"""``python -m pytest_sabot.report.html PATH [PATH_B] [--out FILE] [--layout ...]``: one
offline HTML report, a shim over :func:`pytest_sabot.commands.report.html_main`."""

from pytest_sabot.commands.report import html_main as main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
