"""``python -m pytest_sabot``: the ``sabot`` command without its console script."""

from pytest_sabot.commands.cli import main

raise SystemExit(main())
