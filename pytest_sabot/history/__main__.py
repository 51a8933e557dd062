"""``python -m pytest_sabot.history``: the run history's commands (``sabot history`` and
``sabot regress``), a shim over :mod:`pytest_sabot.commands.history`.

    python -m pytest_sabot.history [--history FILE] list [--limit N] [--json]
    python -m pytest_sabot.history [--history FILE] show RUN [--json]
    python -m pytest_sabot.history [--history FILE] index DIR [DIR ...] [--json]
    python -m pytest_sabot.history [--history FILE] resolve RUN
    python -m pytest_sabot.history [--history FILE] regress A B [--json] [--min-paired N]
"""

from pytest_sabot.commands.history import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
