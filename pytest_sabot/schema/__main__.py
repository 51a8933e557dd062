"""``python -m pytest_sabot.schema [OUT_DIR] [--check]``: the ``sabot schema`` command."""

from pytest_sabot.commands.schema import main

raise SystemExit(main())
