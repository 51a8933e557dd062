"""The exit codes of every ``sabot`` command, ``python -m`` shim and lab gate: one table.

    0  pass: the command did what it was asked; a gate passed; a replay was verified
    1  a gate or a regression: a lab gate failed, rescore differs from results.json, plan
       is over the cap, demo did not produce a declared outcome, regress found a row that
       dropped beyond its interval, a replay diverged
    2  configuration, corruption or harness error: bad options, a malformed or missing
       file (the message names the file, the field and what was expected), an unwritable
       output, a locked or damaged history, a lab gate of ``error``
    3  inconclusive: the records do not say (an interrupted or budget-stopped session, a
       lab gate of ``inconclusive``, too few paired cells to test a regression)

pytest's own exit codes are pytest's (SPEC.md I43); a session never returns these.
"""

from __future__ import annotations

from typing import Final

__all__ = ["EXIT_ERROR", "EXIT_GATE", "EXIT_INCONCLUSIVE", "EXIT_PASS", "GATE_EXIT"]

EXIT_PASS: Final = 0
EXIT_GATE: Final = 1
EXIT_ERROR: Final = 2
EXIT_INCONCLUSIVE: Final = 3

GATE_EXIT: Final[dict[str, int]] = {
    "pass": EXIT_PASS,
    "fail": EXIT_GATE,
    "error": EXIT_ERROR,
    "inconclusive": EXIT_INCONCLUSIVE,
}
"""A lab gate's outcome -> the exit code of the command that ran or evaluated it."""
