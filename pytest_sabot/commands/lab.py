"""The fault lab's commands (``sabot lab ...`` and ``python -m pytest_sabot.lab ...``), as
functions returning exit codes (:mod:`pytest_sabot.core.exit_codes`).

    run SCENARIO --agent builtin:naive --out DIR   run one scenario (exit: the gate)
    run SCENARIO --agent mypkg.agent:run --trust-local-agent --out DIR
                                                    run your own callable, supervised
    run SCENARIO --agent openai:MODEL --live --out DIR   a live model by tool calling
    mcp SCENARIO --out DIR                          serve one run over MCP stdio
    init DIR                                        write a starter scenario
    validate FILE...                                check scenario files
    demo [--out DIR]                                the three controllers' declared gates
    campaign FILE --out DIR                         every trial of a campaign file (resumable)
    replay RUN                                      re-execute a recorded run
    compare A B                                     two runs side by side (exit 1: B regressed)
    evaluate RUN                                    re-evaluate a recorded run offline
    view SCENARIO                                   what an agent is given

Gate exit codes: 0 pass, 1 fail, 2 error, 3 inconclusive. Other commands: 0 success,
1 a declared outcome not produced (demo) or a replay that diverged, 2 bad input (a file,
option or record that cannot be used; the message names it, the field and what was
expected). No command prints a traceback for a user error.

Every run (``run``, ``mcp``, each controller of ``demo --out``) is written by
:func:`pytest_sabot.commands.lab_outputs.write_lab_run`: ``run.json``, ``report.html`` and
``junit.xml`` in its directory, and an entry in the run history (``$SABOT_HISTORY=none``
turns the history off), the same way from ``sabot lab`` and ``python -m pytest_sabot.lab``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pytest_sabot.commands.closed_stdout import guard_if_program
from pytest_sabot.commands.failure import fail
from pytest_sabot.commands.lab_outputs import write_lab_run
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.exit_codes import EXIT_ERROR, EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_PASS
from pytest_sabot.lab.controllers import CONTROLLERS, resolve_agent
from pytest_sabot.lab.engine import agent_view, execute
from pytest_sabot.lab.gate import evaluate
from pytest_sabot.lab.record import LabRun, read_run
from pytest_sabot.lab.replay import replay_run
from pytest_sabot.lab.scenario_load import load_scenario, resolve_scenario
from pytest_sabot.lab.starter import write_starter
from pytest_sabot.lab.trusted import (
    DEFAULT_TIMEOUT_S,
    TRUST_FLAG,
    TrustedLabAgent,
    is_local_agent,
)
from pytest_sabot.lab.vocabulary import RUN_FILE
from pytest_sabot.report.lab import replay_text, run_text


def _written(out: Path, record: LabRun, history: bool) -> None:
    """Write the run's files (run.json, report.html, junit.xml) and, with ``history``,
    record it; the history's line goes to stderr and never changes the exit code."""
    done = write_lab_run(out, record, history=history)
    if done.history:
        print(done.history, file=sys.stderr)


def _guard(body: Callable[[], int]) -> int:
    try:
        return body()
    except SabotDataError as exc:
        return fail("sabot lab", exc)
    except KeyboardInterrupt:
        return fail("sabot lab", "interrupted (the run record was written as cancelled)",
                    EXIT_INCONCLUSIVE)


def _emit(as_json: bool, model: BaseModel | list[Any], text: str) -> None:
    if as_json:
        payload = (model.model_dump(mode="json") if isinstance(model, BaseModel)
                   else [m.model_dump(mode="json") for m in model])
        print(json.dumps(payload, indent=2, sort_keys=True))
    else:
        print(text)


def cmd_run(scenario: str, agent: str, out: Path, *, as_json: bool = False,
            trust_local_agent: bool = False, agent_timeout_s: float = DEFAULT_TIMEOUT_S,
            agent_env: Sequence[str] = (), history: bool = True,
            live: Any = None) -> int:
    """``lab run SCENARIO --agent NAME --out DIR``: exit code of the gate; with ``history``
    the run is added to the run history once its record is on disk.

    ``--agent package.module:callable`` runs a user's callable as a trusted local agent in
    a supervised child process; it is refused unless ``trust_local_agent`` is set.
    ``--agent openai:MODEL`` is a live model agent (``commands.lab_live``): refused unless
    ``live`` (its ``LiveSettings``) opts in and the key is set.
    """
    def body() -> int:
        from pytest_sabot.commands.lab_live import is_live_agent, live_problem, run_live

        if is_live_agent(agent):
            problem = live_problem(agent, live)
            if problem is not None:
                raise SabotDataError("--agent", "agent", problem, agent)
            path = resolve_scenario(scenario)
            record = run_live(load_scenario(path), agent, out, source=str(path), live=live)
            _emit(as_json, record, run_text(record, str(out / RUN_FILE)))
            _written(out, record, history)
            return record.gate.exit_code
        local = is_local_agent(agent)
        if local and not trust_local_agent:
            raise SabotDataError(
                "--agent", "agent",
                f"a built-in controller ({', '.join(sorted(CONTROLLERS))}); a "
                f"'package.module:callable' is your own code and runs only with "
                f"{TRUST_FLAG} (in a supervised child process; not a sandbox, run only "
                "code you trust)", agent)
        path = resolve_scenario(scenario)
        loaded = load_scenario(path)
        if not local:
            record, interrupt = execute(loaded, resolve_agent(agent), source=str(path))
        else:
            from pytest_sabot.trusted.harden import harden

            harden()  # the agent must not find the run's files through /proc/<this pid>
            with TrustedLabAgent(agent, log_dir=out, timeout_s=agent_timeout_s,
                                 pass_env=tuple(agent_env)) as trusted:
                record, interrupt = execute(loaded, trusted.agent, source=str(path))
        _written(out, record, history)
        if interrupt is not None:
            raise interrupt
        _emit(as_json, record, run_text(record, str(out / RUN_FILE)))
        return record.gate.exit_code

    return _guard(body)


def cmd_mcp(scenario: str, out: Path, *, history: bool = True) -> int:
    """``lab mcp SCENARIO --out DIR``: serve one run over MCP stdio; exit code of the gate
    (with ``history`` the run is added to the run history).

    The scenario is checked before anything is served. Nothing but the protocol is
    written to stdout; the summary goes to stderr when the session ends.
    """
    def body() -> int:
        path = resolve_scenario(scenario)
        loaded = load_scenario(path)
        from pytest_sabot.commands.lab_mcp import serve_stdio  # the MCP SDK loads only here

        record = serve_stdio(loaded, out, source=str(path), history=history)
        print(run_text(record, str(out / RUN_FILE)), file=sys.stderr)
        return record.gate.exit_code

    return _guard(body)


def cmd_init(directory: Path) -> int:
    """``lab init DIR``: write a starter scenario."""
    def body() -> int:
        path = write_starter(directory)
        print(f"wrote {path}")
        return EXIT_PASS

    return _guard(body)


def cmd_validate(files: Sequence[str]) -> int:
    """``lab validate FILE...``: 0 when every file is a valid scenario, else 2."""
    worst = EXIT_PASS
    for name in files:
        try:
            path = resolve_scenario(name)
            scenario = load_scenario(path)
        except SabotDataError as exc:
            print(f"sabot lab: {exc}", file=sys.stderr)
            worst = EXIT_ERROR
            continue
        faults = ", ".join(f"{f.id}:{f.fault}" for f in scenario.faults) or "none"
        print(f"{path}: valid ({scenario.name}; faults {faults})")
    return worst


def cmd_demo(out: Path | None = None, *, as_json: bool = False, history: bool = True) -> int:
    """The demo check: 0 only when every controller produces its declared gate. With
    ``out`` each controller's run is written like any run (and recorded in the history)."""
    from pytest_sabot.commands.lab_demo import demo_text, run_demo

    def body() -> int:
        rows = run_demo(out, history=history)
        _emit(as_json, rows, demo_text(rows))
        return EXIT_PASS if all(r.ok for r in rows) else EXIT_GATE

    return _guard(body)


def cmd_replay(run: Path, *, as_json: bool = False) -> int:
    """``lab replay RUN``: 0 verified, 1 diverged, 2 unreadable record (the one replay rule
    of ``sabot replay`` too, SPEC I143); the report names the original gate."""
    from pytest_sabot.commands.replay import replay_exit

    def body() -> int:
        report = replay_run(read_run(run))
        _emit(as_json, report, replay_text(report))
        return replay_exit(report.reproduction)

    return _guard(body)


def cmd_evaluate(run: Path, *, as_json: bool = False) -> int:
    """``lab evaluate RUN``: re-evaluate a record offline; exit code of the gate."""
    def body() -> int:
        record = read_run(run)
        gate = evaluate(record)
        fresh = record.model_copy(update={"gate": gate})
        _emit(as_json, gate, run_text(fresh))
        if gate != record.gate:
            print(f"note: the recorded gate was {record.gate.outcome}", file=sys.stderr)
        return gate.exit_code

    return _guard(body)


def cmd_view(scenario: str) -> int:
    """``lab view SCENARIO``: print exactly what an agent would be given."""
    def body() -> int:
        print(json.dumps(agent_view(load_scenario(resolve_scenario(scenario)))
                         .model_dump(mode="json"), indent=2, sort_keys=True))
        return EXIT_PASS

    return _guard(body)


# --------------------------------------------------------------------------- command line


def add_commands(parser: argparse.ArgumentParser) -> None:
    """The lab's subcommands on ``parser`` (``python -m pytest_sabot.lab`` and ``sabot
    lab`` share them); :func:`dispatch` runs the one parsed."""
    sub = parser.add_subparsers(dest="lab_command", required=True)
    p = sub.add_parser("run", help="run one scenario with one agent")
    p.add_argument("scenario", help="scenario file, or the name of a shipped scenario")
    p.add_argument("--agent", required=True,
                   help="builtin:naive, builtin:resilient, builtin:noop, your own "
                   "package.module:callable (needs --trust-local-agent), or openai:MODEL "
                   "(a live model, needs --live)")
    p.add_argument("--out", type=Path, required=True, help="directory for run.json")
    p.add_argument("--json", action="store_true", help="print the run record as JSON")
    _agent_options(p)
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
    p = sub.add_parser("compare", help="two lab runs side by side; exit 1 when B regresses "
                       "against A")
    p.add_argument("a", help="A: a run.json, its folder, or a lab run id of the history")
    p.add_argument("b", help="B: a run.json, its folder, or a lab run id of the history")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--history", type=Path, help="the run history to look ids up in "
                   "(default $SABOT_HISTORY, else reports/history.sqlite)")
    p = sub.add_parser("view", help="print what an agent is given for a scenario")
    p.add_argument("scenario")
    p = sub.add_parser("campaign", help="run (or resume) every trial of a campaign file")
    p.add_argument("file", type=Path, help="the campaign file (YAML)")
    p.add_argument("--out", type=Path, required=True,
                   help="directory for the trials and summary.json (the same DIR resumes)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _agent_options(p)


def _agent_options(p: argparse.ArgumentParser) -> None:
    """The options of commands that run agents other than the built-in controllers."""
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
    p.add_argument("--live", dest="live", action="store_true",
                   help="allow an openai:MODEL agent (a live model: it spends money; the "
                   "key is read from OPENAI_API_KEY)")
    p.add_argument("--sabot-base-url", dest="base_url", default=None, metavar="URL",
                   help="the OpenAI-compatible server of an openai:MODEL agent (vLLM, "
                   "Ollama, llama.cpp...; default OpenAI's)")
    p.add_argument("--budget-usd", dest="budget_usd", type=float, default=500.0,
                   metavar="USD", help="hard spend cap of a live agent's gateway (500)")


def _live(args: argparse.Namespace) -> Any:
    from pytest_sabot.commands.lab_live import LiveSettings

    return LiveSettings(allow_live=args.live, base_url=args.base_url,
                        budget_usd=args.budget_usd)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") \
            from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def dispatch(args: argparse.Namespace, *, history: bool = True) -> int:
    """Run the lab subcommand ``args`` were parsed for; its exit code. With ``history``
    every run recorded is added to the run history."""
    if args.lab_command == "run":
        return cmd_run(args.scenario, args.agent, args.out, as_json=args.json,
                       trust_local_agent=args.trust_local_agent,
                       agent_timeout_s=args.agent_timeout, agent_env=args.agent_env,
                       history=history, live=_live(args))
    if args.lab_command == "mcp":
        return cmd_mcp(args.scenario, args.out, history=history)
    if args.lab_command == "init":
        return cmd_init(args.dir)
    if args.lab_command == "validate":
        return cmd_validate(args.files)
    if args.lab_command == "demo":
        return cmd_demo(args.out, as_json=args.json, history=history)
    if args.lab_command == "replay":
        return cmd_replay(args.run, as_json=args.json)
    if args.lab_command == "compare":
        from pytest_sabot.commands.lab_compare import cmd_lab_compare
        from pytest_sabot.history.store import chosen_history

        return cmd_lab_compare(args.a, args.b, as_json=args.json,
                               history=chosen_history(args.history), prog="sabot lab compare")
    if args.lab_command == "evaluate":
        return cmd_evaluate(args.run, as_json=args.json)
    if args.lab_command == "campaign":
        from pytest_sabot.commands.lab_campaign import cmd_campaign

        return cmd_campaign(args.file, args.out, trust_local_agent=args.trust_local_agent,
                            agent_timeout_s=args.agent_timeout, agent_env=args.agent_env,
                            live=_live(args), as_json=args.json, history=history)
    return cmd_view(args.scenario)


def parser(prog: str) -> argparse.ArgumentParser:
    """The lab's command line under ``prog`` (``sabot lab`` or ``python -m
    pytest_sabot.lab``)."""
    parser = argparse.ArgumentParser(prog=prog,
                                     description="The fault lab: state-changing tools under "
                                     "transactional faults.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=(__doc__ or "").split("\n\n")[1])
    add_commands(parser)
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m pytest_sabot.lab",
         history: bool = True) -> int:
    """The lab's command line (``sabot lab`` and ``python -m pytest_sabot.lab`` alike):
    every run it records is written with its report and JUnit XML and added to the run
    history."""
    guard_if_program(argv)
    code = dispatch(parser(prog).parse_args(argv), history=history)
    if argv is None:  # an MCP server stopped by a signal: its stdin reader blocks the exit
        from pytest_sabot.commands.closed_stdout import end_if_reader_left

        end_if_reader_left(code)
    return code


__all__ = [
    "add_commands",
    "cmd_demo",
    "cmd_evaluate",
    "cmd_init",
    "cmd_mcp",
    "cmd_replay",
    "cmd_run",
    "cmd_validate",
    "cmd_view",
    "dispatch",
    "main",
    "parser",
]
