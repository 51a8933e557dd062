"""``python -m pytest_sabot.lab``: the lab's command line, a shim over
:mod:`pytest_sabot.commands.lab` (``sabot lab`` is the same command line). Each run it
records is written with its report.html and junit.xml and added to the run history.

    run SCENARIO --agent builtin:naive --out DIR   run one scenario (exit: the gate)
    mcp SCENARIO --out DIR                          serve one run over MCP stdio
    init DIR | validate FILE... | demo | replay RUN | evaluate RUN | view SCENARIO

Gate exit codes: 0 pass, 1 fail, 2 error, 3 inconclusive; 2 also means bad input.
"""

from pytest_sabot.commands.lab import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
