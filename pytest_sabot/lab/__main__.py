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
from pathlib import Path

from pytest_sabot.lab import commands
from pytest_sabot.lab.trusted import DEFAULT_TIMEOUT_S, TRUST_FLAG


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pytest_sabot.lab",
                                     description="The fault lab: state-changing tools under "
                                     "transactional faults.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=(__doc__ or "").split("\n\n")[1])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run one scenario with one agent")
    p.add_argument("scenario", help="scenario file, or the name of a shipped scenario")
    p.add_argument("--agent", required=True,
                   help="builtin:naive, builtin:resilient, builtin:noop, or your own "
                   "package.module:callable (needs --trust-local-agent)")
    p.add_argument("--out", type=Path, required=True, help="directory for run.json")
    p.add_argument("--json", action="store_true", help="print the run record as JSON")
    p.add_argument(TRUST_FLAG, dest="trust_local_agent", action="store_true",
                   help="run a package.module:callable agent: your code runs in a "
                   "supervised child process (not a sandbox; run only code you trust)")
    p.add_argument("--agent-timeout", dest="agent_timeout", type=_seconds,
                   default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help="real-time deadline of a trusted agent's process (default "
                   f"{DEFAULT_TIMEOUT_S:g}); at the deadline it is stopped")
    p.add_argument("--agent-env", dest="agent_env", action="append", default=[],
                   metavar="NAME", help="pass this environment variable to a trusted "
                   "agent's process (repeatable; it gets only a short allow-list otherwise)")
    p = sub.add_parser("mcp", help="serve one run of a scenario over MCP stdio")
    p.add_argument("scenario", help="scenario file, or the name of a shipped scenario")
    p.add_argument("--out", type=Path, required=True, help="directory for run.json")
    p = sub.add_parser("init", help="write a starter scenario into DIR")
    p.add_argument("dir", type=Path)
    p = sub.add_parser("validate", help="check scenario files")
    p.add_argument("files", nargs="+")
    p = sub.add_parser("demo", help="check the scripted controllers' declared gates")
    p.add_argument("--out", type=Path, help="keep the run records here")
    p.add_argument("--json", action="store_true")
    for name, text in (("replay", "re-execute a recorded run and compare"),
                       ("evaluate", "re-evaluate a recorded run's gate offline")):
        p = sub.add_parser(name, help=text)
        p.add_argument("run", type=Path, help="run.json or the directory holding it")
        p.add_argument("--json", action="store_true")
    p = sub.add_parser("view", help="print what an agent is given for a scenario")
    p.add_argument("scenario")
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") \
            from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "run":
        return commands.cmd_run(args.scenario, args.agent, args.out, as_json=args.json,
                                trust_local_agent=args.trust_local_agent,
                                agent_timeout_s=args.agent_timeout, agent_env=args.agent_env)
    if args.command == "mcp":
        return commands.cmd_mcp(args.scenario, args.out)
    if args.command == "init":
        return commands.cmd_init(args.dir)
    if args.command == "validate":
        return commands.cmd_validate(args.files)
    if args.command == "demo":
        return commands.cmd_demo(args.out, as_json=args.json)
    if args.command == "replay":
        return commands.cmd_replay(args.run, as_json=args.json)
    if args.command == "evaluate":
        return commands.cmd_evaluate(args.run, as_json=args.json)
    return commands.cmd_view(args.scenario)


if __name__ == "__main__":
    sys.exit(main())
