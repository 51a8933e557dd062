"""``python -m pytest_sabot.lab``: the lab's command line.

    run SCENARIO --agent builtin:naive --out DIR   run one scenario (exit: the gate)
    run SCENARIO --agent mypkg.agent:run --trust-local-agent --out DIR
                                                    run your own callable, supervised
    mcp SCENARIO --out DIR                          serve one run over MCP stdio
    init DIR                                        write a starter scenario
    validate FILE...                                check scenario files
    demo [--out DIR]                                the three controllers' declared gates
    replay RUN                                      re-execute a recorded run
    evaluate RUN                                    re-evaluate a recorded run offline
    view SCENARIO                                   what an agent is given

Gate exit codes: 0 pass, 1 fail, 2 error, 3 inconclusive; 2 also means bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pytest_sabot.lab import commands


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pytest_sabot.lab",
                                     description="The fault lab: state-changing tools under "
                                     "transactional faults.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=(__doc__ or "").split("\n\n")[1])
    commands.add_commands(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return commands.dispatch(_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
