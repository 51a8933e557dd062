"""``sabot mcp CELL_ID``: serve one cell over MCP stdio; the client is the pipeline.

``CELL_ID`` is a cell of a wave (``--sabot-wave``, default 3) in the row of an MCP client,
``mcp_client-default-O3-T1-s11``, or its short form ``O3-T1-s11`` (``baseline-T1-s11`` for
the no-fault baseline); or the name or file of a fault-lab scenario, which is served by the
lab's own MCP server (``python -m pytest_sabot.lab mcp``, docs/LAB.md).

A Sabot cell is run by the harness exactly as a framework's is (``run_cell``): the fault is
planted at the same seams, the trace is written by the same writer, the gateway serves the
model endpoints. The client acts through these tools (the official MCP Python SDK, stdio):

* ``sabot_context`` (and the resource ``sabot://cell/context``): the public task as the
  worker's first messages, the capabilities, the tool catalog and one OpenAI-compatible
  model endpoint per agent (the gateway's scoped door and a credential of that agent's run,
  never a provider key or the gateway's secret) - what a trusted local agent is given,
  nothing of the operator, the seed, the private spec or the rules;
* one tool per task tool: recorded, the operator seams applied, the observation as text;
* ``sabot_worker_prompt``, ``sabot_reviewer_prompt``: the messages of a pass, built by the
  harness; ``sabot_handoff``: a text from one component to another (the O3 seam), answered
  with what arrived; ``sabot_report``: one event of the client's own checks;
* ``sabot_finish``: ends the run for good with the client's artifact and returns the
  evaluation (the cell's verdict, scored by ``pytest_sabot/trusted/mcp_client.yaml``).
  Every later call is refused and reaches nothing.

A client that leaves before ``sabot_finish`` leaves a RUN_ERROR record. A fault cell is
scored beside its baseline when ``--out`` already holds that baseline's record (serve the
baseline first); otherwise its verdict says the baseline is unknown. Nothing but the
protocol is written to stdout; the summary goes to stderr. No network transport: the client
that started the process is the only one that can speak. The process makes itself
non-dumpable and hides its command line before it serves (``trusted/harden.py``): a client
that is not root finds none of its descriptors (the live trace among them) through /proc.
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.exit_codes import EXIT_PASS
from pytest_sabot.session.options import BY_DEST

if TYPE_CHECKING:
    import mcp.types as types
    from mcp.server.lowlevel import Server

    from pytest_sabot.core.context import RunContext
    from pytest_sabot.core.models.cells import Cell
    from pytest_sabot.matrix.standard import Standard
    from pytest_sabot.trusted.sabot import RunHandlers

CONTEXT_URI = "sabot://cell/context"
SERVER_NAME = "pytest-sabot-cell"
CONTEXT = "sabot_context"
WORKER_PROMPT = "sabot_worker_prompt"
REVIEWER_PROMPT = "sabot_reviewer_prompt"
HANDOFF = "sabot_handoff"
REPORT = "sabot_report"
FINISH = "sabot_finish"
DEFAULT_WAVE = "3"
_SHORT = re.compile(r"^(?:(?P<op>O\d+)|baseline)-(?P<task>T\d+)-s(?P<seed>\d+)$")
INSTRUCTIONS = (
    "You are the pipeline of one Sabot cell. Read sabot_context, run your own worker and "
    "reviewer on the model endpoints it names, call the task's tools, send the worker's "
    "draft to the reviewer with sabot_handoff, report your own checks with sabot_report, "
    "and end with sabot_finish (your final artifact); it returns the evaluation."
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``mcp`` subcommand's arguments."""
    p = sub.add_parser("mcp", help="serve one cell (or a lab scenario) over MCP stdio; "
                       "the MCP client is the pipeline")
    p.add_argument("cell", help="mcp_client-default-O3-T1-s11, O3-T1-s11, baseline-T1-s11, "
                   "or a lab scenario's name or file")
    p.add_argument("--out", type=Path, required=True,
                   help="directory of the run's records (a cell's folder under cells/)")
    for dest in ("sabot_wave", "sabot_root", "sabot_model"):
        spec = BY_DEST[dest]
        p.add_argument(spec.flag, dest=dest, default=spec.default, type=spec.typed,
                       help=spec.help)


# --------------------------------------------------------------------------- the cell


def find_cell(std: Standard, text: str) -> Cell:
    """The MCP client's cell named by ``text`` in the (already rewritten) wave."""
    from pytest_sabot.trusted.sabot import CONFIG, MCP_NAME

    row = f"{MCP_NAME}-{CONFIG}-"
    short = text.removeprefix(row)
    match = _SHORT.match(short)
    if match is None:
        raise SabotDataError("sabot mcp", "CELL_ID", f"{row}<O1..O6|baseline>-<task>-s<seed> "
                             "(or the short form O3-T1-s11), or a lab scenario", text)
    cell_id = f"{row}{short}"
    try:
        return std.cell(cell_id)
    except KeyError:
        raise SabotDataError("sabot mcp", "CELL_ID", f"a cell of {std.wave.label} (its tasks "
                             f"{', '.join(std.wave.tasks)}, seeds "
                             f"{', '.join(str(s) for s in sorted({c.seed for c in std.cells}))})",
                             text) from None


class CellRun:
    """One served cell: the harness runs it in a thread of its own, whose pipeline waits
    for the client's ``sabot_finish``; the MCP handlers act on its run context."""

    def __init__(self, std: Standard, cell: Cell, out: Path, model: str,
                 run_id: str = "mcp") -> None:
        self.std = std
        self.run_id = run_id
        self.cell = cell
        self.out = out
        self.model = model
        self.ctx: RunContext | None = None
        self.handlers: RunHandlers | None = None
        self.ready = threading.Event()
        self.release = threading.Event()
        self.output: str | None = None
        self.leave_reason = ""
        self.error: BaseException | None = None
        self.evaluation: dict[str, Any] | None = None
        # Run once the cell is scored and before the finish is answered (the session's
        # results.json): what the client does to the output afterwards is not what it says.
        self.after_scored: Callable[[], object] | None = None
        # One call (and one read of the context) at a time: the finish is taken once, and
        # nothing sent while it closes the run reaches the run.
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._gateway: Any = None

    # ----------------------------------------------------------------- harness side

    def start(self) -> None:
        """Start the gateway and the cell's run; return once its context is ready."""
        from pytest_sabot.core.model_spec import parse_model
        from pytest_sabot.gateway import GatewaySettings, start_gateway
        from pytest_sabot.harness.run import RunSettings, run_cell

        values = {"sabot_model": self.model}
        self._gateway = start_gateway(GatewaySettings.from_options(values, self.out))
        settings = RunSettings(
            root=self.std.root, out_dir=self.out, gateway_url=str(self._gateway.url),
            model=parse_model(self.model), timeout_s=0, attempts=1, session=self.run_id,
            registration_hash=self.std.registration_hash(), rules=self.std.rules.version,
        )

        def body() -> None:
            try:
                run_cell(self.cell, self.std.wave, settings)
            except BaseException as exc:  # reported to the client, never swallowed
                self.error = exc
            finally:
                self.ready.set()

        self._thread = threading.Thread(target=body, name=f"sabot-mcp-{self.cell.id}",
                                        daemon=True)
        self._thread.start()
        self.ready.wait()
        if self.ctx is None:
            raise SabotDataError("sabot mcp", "CELL_ID", "a cell the harness can start",
                                 f"{self.cell.id}: {self.error}")

    def pipeline(self, ctx: RunContext) -> None:
        """The row's ``run(ctx)``: hand the context to the server, wait for the finish."""
        from pytest_sabot.trusted.sabot import RunHandlers

        self.ctx = ctx
        self.handlers = RunHandlers(ctx)
        self.ready.set()
        self.release.wait()
        ctx.sync_model_calls()
        if self.output is None:
            raise ConnectionAbortedError(self.leave_reason or "the MCP client left before "
                                         f"{FINISH}")
        ctx.emit(self.output)

    def close(self, output: str | None, reason: str = "") -> dict[str, Any]:
        """End the run (once): release the pipeline, wait for the harness, score the cell."""
        if self.evaluation is not None:
            return self.evaluation
        self.output, self.leave_reason = output, reason
        self.release.set()
        if self._thread is not None:
            self._thread.join()
        if self._gateway is not None:
            self._gateway.close()
        evaluation = self._score()
        if self.after_scored is not None:
            self.after_scored()
        self.evaluation = evaluation
        return evaluation

    def close_after_calls(self, reason: str) -> dict[str, Any]:
        """End the run as the client left it (``reason``), once no call is being answered;
        the evaluation its finish gave, if it finished."""
        with self._lock:
            return self.close(None, reason)

    def _score(self) -> dict[str, Any]:
        from pytest_sabot.core.records import cell_dir
        from pytest_sabot.results.adjudicate import (
            read_record,
            score_baseline_dir,
            score_fault_dir,
        )

        run_dir = cell_dir(self.out, self.cell.id)
        body: dict[str, Any] = {"cell_id": self.cell.id, "record": str(run_dir)}
        if self.cell.is_baseline:
            verdict: Any = score_baseline_dir(self.std, run_dir)
        else:
            base = read_record(self.out, self.cell.baseline_id)
            status = (score_baseline_dir(self.std, cell_dir(self.out, self.cell.baseline_id))
                      .status if base.finished and base.kind == "run" else None)
            body["baseline"] = status or "unknown: no record of it in --out"
            verdict = score_fault_dir(self.std, self.cell, run_dir, status)
        body["verdict"] = verdict.model_dump(mode="json")
        return body

    # ----------------------------------------------------------------- client side

    def context(self) -> dict[str, Any]:
        from pytest_sabot.trusted.sabot import start_message

        with self._lock:
            if self.evaluation is not None:
                raise ValueError(f"the run is finished ({FINISH} was called); nothing more "
                                 "reaches the run")
            assert self.ctx is not None
            start = start_message(self.ctx).model_dump(mode="json")
        start.pop("type", None)
        return dict(start)

    def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        with self._lock:
            return self._call(name, arguments)

    def _call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        from pytest_sabot.commands.mcp_stdio import (
            finish_output,
            finished_result,
            json_result,
            text_result,
        )
        from pytest_sabot.trusted import sabot_child as child
        from pytest_sabot.trusted.channel import Refusal

        if self.evaluation is not None:
            return finished_result(FINISH, "the run")
        if name == FINISH:
            return json_result(self.close(finish_output(arguments)))
        if name == CONTEXT:
            return json_result(self.context())
        harness = {WORKER_PROMPT: child.WORKER_PROMPT, REVIEWER_PROMPT: child.REVIEWER_PROMPT,
                   HANDOFF: child.HANDOFF, REPORT: child.REPORT}
        assert self.handlers is not None
        try:
            answer = self.handlers.call_tool(harness.get(name, name), dict(arguments))
        except Refusal as refusal:
            return text_result(refusal.message, error=True)
        if isinstance(answer, dict):
            return json_result(answer)
        return text_result(str(answer), error=False)

    def tools(self) -> list[types.Tool]:
        import mcp.types as types

        assert self.ctx is not None

        def schema(**properties: Any) -> dict[str, Any]:
            return {"type": "object", "properties": properties,
                    "required": [k for k in properties if k not in ("round", "feedback",
                                                                    "data", "text")],
                    "additionalProperties": False}

        text, integer = {"type": "string"}, {"type": "integer", "minimum": 0}
        listed = [types.Tool(name=t.name, description=t.description, inputSchema=t.parameters)
                  for t in self.ctx.tools]
        listed += [
            types.Tool(name=CONTEXT, description="The public task (the worker's first "
                       "messages), your capabilities, the tool catalog and your model "
                       "endpoints (the same as the resource " + CONTEXT_URI + ").",
                       inputSchema=schema(), annotations=types.ToolAnnotations(
                           readOnlyHint=True)),
            types.Tool(name=WORKER_PROMPT, description="The worker's messages of pass "
                       "'round' (round 1 carries 'feedback', the reason of a rejection).",
                       inputSchema=schema(round=integer, feedback=text)),
            types.Tool(name=REVIEWER_PROMPT, description="The reviewer's messages for a "
                       "delivered draft (the verdict protocol included).",
                       inputSchema=schema(delivered=text, round=integer)),
            types.Tool(name=HANDOFF, description="Send text from one of your components to "
                       "another (worker -> reviewer); returns what arrived.",
                       inputSchema=schema(sender=text, receiver=text, text=text)),
            types.Tool(name=REPORT, description="Record one event of your own checks: kind "
                       "review (a reviewer's reply with its VERDICT line), retry (data: "
                       "source revise, reason) or escalation (data: mechanism, message).",
                       inputSchema=schema(kind=text, component=text, text=text,
                                          data={"type": "object"})),
            types.Tool(name=FINISH, description="End the run for good with 'output', your "
                       "final artifact; returns the evaluation. Nothing reaches the run "
                       "afterwards.", inputSchema=schema(output=text),
                       annotations=types.ToolAnnotations(destructiveHint=True)),
        ]
        taken = {t.name for t in self.ctx.tools} & {CONTEXT, WORKER_PROMPT, REVIEWER_PROMPT,
                                                     HANDOFF, REPORT, FINISH}
        if taken:
            raise SabotDataError("sabot mcp", "tools", "task tools apart from the harness's",
                                 sorted(taken))
        return listed


_RUN: CellRun | None = None


def pipeline(ctx: RunContext) -> None:
    """The ``mcp_client`` row's ``run(ctx)`` (registered by :func:`serve_cell`)."""
    if _RUN is None:
        raise RuntimeError("the mcp_client row runs only under sabot mcp")
    _RUN.pipeline(ctx)


def build_server(run: CellRun) -> Server[Any, Any]:
    """The low-level MCP server of one cell."""
    import anyio.to_thread

    from pytest_sabot.commands.mcp_stdio import context_server

    async def call(server: Server[Any, Any], name: str,
                   arguments: dict[str, Any]) -> types.CallToolResult:
        # the harness's seams block (tools, the gateway drain): off the event loop
        result: types.CallToolResult = await anyio.to_thread.run_sync(
            run.call, name, arguments or {})
        return result

    return context_server(SERVER_NAME, INSTRUCTIONS, tools=run.tools, call=call,
                          uri=CONTEXT_URI, context=run.context,
                          description="The public task, capabilities, tool catalog and "
                          "model endpoints.")


def serve_cell(std: Standard, cell: Cell, out: Path, model: str, run_id: str = "mcp",
               after_scored: Callable[[], object] | None = None) -> dict[str, Any]:
    """Serve one cell on stdin/stdout until the client finishes or leaves; its evaluation
    (``after_scored`` runs once the cell is scored, before the finish is answered)."""
    from pytest_sabot.commands.mcp_stdio import serve_until_left
    from pytest_sabot.trusted.harden import harden

    global _RUN
    # The client started this process: it must not find the live trace (or anything else
    # of the run) through /proc/<this pid> (fd, environ, mem, cwd, cmdline).
    harden()
    from pytest_sabot.core.secrets import redact_provider_keys

    redact_provider_keys()  # a key in this process's environment never reaches the records
    run = CellRun(std, cell, out, model, run_id)
    run.after_scored = after_scored
    _RUN = run
    try:
        run.start()
        return run.close_after_calls(serve_until_left(build_server(run), FINISH))
    finally:
        _RUN = None


def cmd_mcp(args: argparse.Namespace) -> int:
    """``sabot mcp CELL_ID --out DIR``: 0 once the run is recorded and scored."""
    from pytest_sabot.lab.scenario_load import resolve_scenario

    try:
        resolve_scenario(args.cell)
    except SabotDataError:
        pass
    else:  # a lab scenario: the lab's own MCP server
        from pytest_sabot.commands.lab import cmd_mcp as lab_mcp

        return lab_mcp(args.cell, args.out)
    from pytest_sabot.core.frameworks import ADAPTERS
    from pytest_sabot.trusted.sabot import MCP_NAME

    registered = MCP_NAME not in ADAPTERS.names()
    if registered:
        ADAPTERS.register(MCP_NAME, "pytest_sabot.trusted.sabot:mcp_adapter",
                          origin="sabot mcp")
    try:
        return _serve(args)
    finally:
        if registered:
            ADAPTERS.unregister(MCP_NAME)


def _serve(args: argparse.Namespace) -> int:
    from pytest_sabot.matrix.standard import load_standard
    from pytest_sabot.trusted.sabot import MCP_NAME, agent_wave

    model = str(args.sabot_model)
    if not model.startswith("sim"):
        raise SabotDataError("sabot mcp", "--sabot-model", "the embedded model, 'sim' or "
                             "'sim:<persona>' (a cell served over MCP runs keyless)", model)
    std = agent_wave(load_standard(str(args.sabot_wave or DEFAULT_WAVE), args.sabot_root),
                     MCP_NAME, "an MCP client")
    cell = find_cell(std, args.cell)
    from pytest_sabot.commands.mcp_session import write_session
    from pytest_sabot.core.manifest import new_run_id
    from pytest_sabot.core.records import now_iso

    run_id, started = new_run_id(), now_iso()
    written: list[Any] = []
    body = serve_cell(std, cell, args.out, model, run_id, after_scored=lambda: written.append(
        write_session(std, args.out, run_id=run_id, started=started, model=model)))
    verdict = body["verdict"]
    summary = (verdict.get("excluded") or {}).get("code") or verdict.get("detection") \
        or verdict.get("status")
    print(f"sabot mcp: {cell.id}: {summary} (record: {body['record']})", file=sys.stderr)
    results = written[0]
    for row in results.scoreboard.rows:
        print(f"sabot mcp: row {row.row}: {_row_words(row)} "
              f"(results: {args.out / 'results.json'})", file=sys.stderr)
    return EXIT_PASS


def _row_words(row: Any) -> str:
    """The row's standing in a few words, as the terminal summary gives it."""
    from pytest_sabot.report.render import rate_ci

    rate = row.sabot_score
    return (f"Sabot Score {rate_ci(rate)} ({rate.k} of {rate.n} valid fault cells detected "
            "hard)")
