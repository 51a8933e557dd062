"""``python -m pytest_sabot.schema [OUT_DIR] [--check]``: the ``sabot schema`` command."""

from pytest_sabot.commands.closed_stdout import run_as_program
from pytest_sabot.commands.schema import main

raise SystemExit(run_as_program(main))
