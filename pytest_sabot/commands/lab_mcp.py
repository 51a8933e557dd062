"""One lab run served over MCP stdio: ``python -m pytest_sabot.lab mcp SCENARIO --out DIR``.

Any MCP client can be the agent. The server (the official MCP Python SDK's low-level
``Server``, over stdio only) exposes:

* the resource ``lab://run/context`` and the tool ``get_context``: the public task, the
  capabilities and the tool catalog, exactly what an in-process agent is given;
* one tool per capability, with the catalog's argument schema; each call goes through the
  lab's boundary like any agent's call (faults, the four streams, virtual time) and
  returns the ``Observation``: its stable JSON as text, the full observation as structured
  content, ``isError`` when it is a typed error;
* ``sleep``: wait ``ms`` milliseconds of virtual time (to honour ``retry_after_ms``);
* ``register_usage``: the client says what one or more of its own model calls used
  (provider, model, calls, tokens, optional cost); each registration adds to the ones
  before, is checked (``lab.client_usage``, MU1..MU7) and kept in the record's
  ``client_usage``, apart from the usage the lab observed (none: 'unknown');
* ``finish_run``: closes the run for good, writes ``run.json`` and returns the evaluation
  (gate, violations, coverage, the client usage and its checks); ``usage_total`` is the
  client's own total, checked against its registrations. Every later call is refused and
  reaches nothing.

Arguments are not validated by the SDK: the boundary sees every request as it was made and
records it (a malformed one answers ``invalid_arguments``). A client that goes away
without ``finish_run`` still gets a record: execution ``cancelled``, so the gate is
inconclusive unless a violation was observed. There is no network transport, so there is
no door to lock: the client that started the process is the only one that can speak.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server

from pytest_sabot.commands.lab_outputs import write_lab_run
from pytest_sabot.commands.mcp_stdio import (
    context_server,
    finish_output,
    finished_result,
    json_result,
    serve_until_left,
    text_result,
)
from pytest_sabot.core.secrets import redact_provider_keys
from pytest_sabot.lab.agent import AgentStopped, LimitReached
from pytest_sabot.lab.catalog import ToolContract
from pytest_sabot.lab.client_usage import register, settle
from pytest_sabot.lab.engine import LabSession
from pytest_sabot.lab.record import AgentInfo, LabRun, UsageEntry
from pytest_sabot.lab.scenario import Scenario
from pytest_sabot.lab.vocabulary import RUN_FILE
from pytest_sabot.trusted.harden import harden

SERVER_NAME = "sabot-lab"
CONTEXT_URI = "lab://run/context"
CONTEXT_TOOL = "get_context"
SLEEP_TOOL = "sleep"
FINISH_TOOL = "finish_run"
USAGE_TOOL = "register_usage"
_COUNT = {"type": "integer", "minimum": 0}
_USAGE_FIELDS: dict[str, Any] = {
    "calls": {**_COUNT, "description": "Model calls this registration covers (>= 1)."},
    "input_tokens": {**_COUNT, "description": "Their input (prompt) tokens."},
    "output_tokens": {**_COUNT, "description": "Their output (completion) tokens."},
    "cost_usd": {"type": "number", "minimum": 0, "description": "Their cost in US dollars, "
                 "if known."},
}
USAGE_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["provider", "model", "calls", "input_tokens",
                                   "output_tokens"],
    "properties": {"provider": {"type": "string", "description": "One provider."},
                   "model": {"type": "string", "description": "One model."},
                   **_USAGE_FIELDS},
    "additionalProperties": False,
}
TOTAL_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["calls", "input_tokens", "output_tokens"],
    "properties": _USAGE_FIELDS, "additionalProperties": False,
    "description": "Your own total of every register_usage call, if you keep one: checked "
                   "against the registrations (a total that differs counts none of them).",
}
INSTRUCTIONS = (
    "One run of a simulated helpdesk. Read lab://run/context (or call get_context) for the "
    "task, your capabilities and each tool's contract (arguments, result, typed errors, "
    "idempotency). Act only through the tools; wait with sleep(ms) (virtual time). The lab "
    "does not see your model calls: say what they used with register_usage (each call adds "
    "to the ones before). Call finish_run when you are done: it closes the run for good and "
    "returns the evaluation."
)


def _describe(contract: ToolContract) -> str:
    return (f"{contract.description} Idempotency: {contract.idempotency.support}. "
            f"{contract.idempotency.semantics} Errors: "
            + ", ".join(e.code for e in contract.errors) + ".")


class McpRun:
    """The state of one served run: the lab session, the client's name, the record."""

    def __init__(self, scenario: Scenario, out_dir: Path, *, source: str | None = None,
                 history: bool = True) -> None:
        self.session = LabSession(scenario, source=source)
        self.out_dir = out_dir
        self.history = history
        self.client = "client"
        self.record: LabRun | None = None
        self.usage: list[UsageEntry] = []
        self.actions = 0  # the client's tool calls (not register_usage) and context reads
        self.context_read = False
        self._t0 = time.perf_counter()

    # ----------------------------------------------------------------- what is listed

    def context(self) -> dict[str, Any]:
        return self.session.view.model_dump(mode="json")

    def read_context(self) -> dict[str, Any]:
        """The context, as the client reads it (an action; registrations may follow)."""
        self.actions += 1
        self.context_read = True
        return self.context()

    def tools(self) -> list[types.Tool]:
        listed = [
            types.Tool(
                name=c.name, description=_describe(c), inputSchema=c.arguments,
                annotations=types.ToolAnnotations(
                    readOnlyHint=c.effect == "read", destructiveHint=False,
                    idempotentHint=c.idempotency.support in ("read_only", "supported"),
                    openWorldHint=False),
            )
            for c in self.session.view.catalog
        ]
        listed += [
            types.Tool(name=CONTEXT_TOOL, description="The public task, your capabilities and "
                       "the tool catalog (the same as the resource " + CONTEXT_URI + ").",
                       inputSchema={"type": "object", "properties": {},
                                    "additionalProperties": False},
                       annotations=types.ToolAnnotations(readOnlyHint=True)),
            types.Tool(name=SLEEP_TOOL, description="Wait ms milliseconds of the run's virtual "
                       "time (returns at once). Use it to honour retry_after_ms or to back off.",
                       inputSchema={"type": "object", "required": ["ms"],
                                    "properties": {"ms": {"type": "integer", "minimum": 0}},
                                    "additionalProperties": False}),
            types.Tool(name=USAGE_TOOL, description="Say what one or more of your model "
                       "calls used, for one provider and one model; each registration adds "
                       "to the ones before (register each call, or several at once, never a "
                       "running total). Checked for consistency and recorded apart from what "
                       "the lab observed; an inconsistent one is kept and never counted.",
                       inputSchema=USAGE_SCHEMA,
                       annotations=types.ToolAnnotations(readOnlyHint=False,
                                                         destructiveHint=False,
                                                         idempotentHint=False,
                                                         openWorldHint=False)),
            types.Tool(name=FINISH_TOOL, description="End the run for good: nothing reaches "
                       "the world afterwards. Returns the evaluation (gate, violations, fault "
                       "coverage, your registered usage and its checks). 'output' is your own "
                       "account (recorded, never judged); 'usage_total' your own total of "
                       "the usage you registered, if you keep one.",
                       inputSchema={"type": "object",
                                    "properties": {"output": {"type": "string"},
                                                   "usage_total": TOTAL_SCHEMA},
                                    "additionalProperties": False},
                       annotations=types.ToolAnnotations(destructiveHint=True)),
        ]
        return listed

    # ----------------------------------------------------------------- calls

    def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        if self.record is not None:
            return finished_result(FINISH_TOOL, "the world")
        if name == FINISH_TOOL:
            record = self.finish(output=finish_output(arguments),
                                 usage_total=arguments.get("usage_total"))
            return self._evaluation(record)
        if name == USAGE_TOOL:
            return self._register(arguments)
        self.actions += 1
        if name == CONTEXT_TOOL:
            view = self.read_context()
            return json_result(view)
        try:
            if name == SLEEP_TOOL:
                self.session.context.sleep(arguments.get("ms"))  # type: ignore[arg-type]
                return text_result(json.dumps({"ok": True, "slept_ms": arguments["ms"]}),
                                   error=False)
            observation = self.session.context.call_tool(name, arguments)
        except (LimitReached, ValueError) as exc:
            return text_result(str(exc), error=True)
        return text_result(observation.to_text(), error=not observation.ok,
                           structured=observation.model_dump(mode="json"))

    def _register(self, arguments: dict[str, Any]) -> types.CallToolResult:
        entry = register(self.usage, arguments, context_read=self.context_read,
                         actions_before=self.actions, at_ms=self.session.boundary.now_ms)
        self.usage.append(entry)
        body = entry.model_dump(mode="json")
        said = ("registered, consistent" if not entry.failed else "registered, inconsistent: "
                + "; ".join(f"{f.rule} {f.message}" for f in entry.failed))
        return text_result(said, error=bool(entry.failed), structured=body)

    def finish(self, *, output: str = "", error: BaseException | None = None,
               usage_total: Any = None) -> LabRun:
        """Close the run (once), write its files (run.json, report.html, junit.xml), record
        it in the history and return the record. The client's registered usage goes in
        ``client_usage``; what the lab observed (``measurement.provider_usage``) stays
        'unknown'."""
        if self.record is None:
            record = self.session.finish(
                AgentInfo(name=f"mcp:{self.client}", kind="mcp", fixture=False),
                output=output, error=error,
                agent_ms=(time.perf_counter() - self._t0) * 1000,
            )
            self.record = record.model_copy(
                update={"client_usage": settle(self.usage, usage_total)})
            done = write_lab_run(self.out_dir, self.record, history=self.history)
            if done.history:
                print(done.history, file=sys.stderr)  # stdout is the protocol's
        return self.record

    def _evaluation(self, record: LabRun) -> types.CallToolResult:
        gate = record.gate
        body = {
            "run_id": record.run_id,
            "record": str(self.out_dir / RUN_FILE),
            "execution": record.execution.model_dump(mode="json"),
            "gate": gate.model_dump(mode="json"),
            "client_usage": (record.client_usage.model_dump(mode="json")
                             if record.client_usage else None),
        }
        return json_result(body)


def build_server(run: McpRun) -> Server[Any, Any]:
    """The low-level MCP server for one run."""

    async def call(server: Server[Any, Any], name: str,
                   arguments: dict[str, Any]) -> types.CallToolResult:
        params = server.request_context.session.client_params
        if params is not None and run.record is None:
            run.client = params.clientInfo.name
        return run.call(name, arguments)

    return context_server(SERVER_NAME, INSTRUCTIONS, tools=run.tools, call=call,
                          uri=CONTEXT_URI, context=run.read_context,
                          description="The public task, capabilities and tool catalog.")


def serve_stdio(scenario: Scenario, out_dir: Path, *, source: str | None = None,
                history: bool = True) -> LabRun:
    """Serve one run on stdin/stdout until the client leaves; the run's record.

    A client that leaves (or a SIGTERM, SIGHUP or SIGINT) before ``finish_run`` ends the
    run as ``cancelled``; the record is written either way.
    """
    harden()  # the client must not find the run's files through /proc/<this pid>
    redact_provider_keys()  # a key in this process's environment never reaches the record
    run = McpRun(scenario, out_dir, source=source, history=history)
    server = build_server(run)

    reason = serve_until_left(server, FINISH_TOOL)  # a SIGTERM, SIGHUP or SIGINT ends it too
    return run.finish(error=AgentStopped("cancelled", reason))
