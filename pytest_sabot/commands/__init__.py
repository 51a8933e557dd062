"""The ``sabot`` command line (``cli``) and its commands: rescore, report, validate, plan,
schema, compare, demo, and the anchor fire-rate table."""

# The same four exit codes for every command (``pytest_sabot.commands.cli``).
EXIT_PASS = 0
EXIT_GATE = 1
EXIT_ERROR = 2
EXIT_INCONCLUSIVE = 3
