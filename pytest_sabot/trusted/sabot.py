"""A trusted local agent as the pipeline of a Sabot wave (the parent's side).

``pytest --sabot-wave=3 --sabot-agent mypkg.agent:run --trust-local-agent`` runs the wave's
cells with one row, ``mypkg_agent_run-default`` (``--sabot-agent-row`` names it otherwise;
``--sabot-agent-mapping`` gives the mapping that reads its own checks,
``--sabot-agent-env`` the variables its child is given: trusted/agent_row.py): the user's
callable is the pipeline. It is
registered as a framework adapter like any other (:func:`register`), so the harness runs
it, plants the fault, records the trace and scores it exactly as it does a shipped
framework; the adapter's ``run(ctx)`` (:func:`run`) starts the callable in a supervised
child process (:class:`~pytest_sabot.trusted.supervisor.Supervisor`) and serves its
requests with the run context:

* the child gets the worker's first messages (the task's public view), its capabilities,
  the tool catalog and one model endpoint per agent, and nothing else;
* a tool call runs through the context's tool handle (recorded, operator seams applied);
  a prompt, a handoff (the O3 seam) or an own-check report goes through the context too;
  the gateway's exchanges are pulled into the trace before each request is served, so a
  model call precedes what was derived from it;
* the callable's return value is the run's artifact;
* the real-time deadline is enforced by the supervisor: at the deadline the process is
  stopped and every request that still arrives is refused and kept in the process report,
  never carried out; the run is a RUN_ERROR (timeout);
* a callable that raises, a process that crashes, exits or breaks the protocol: a
  RUN_ERROR naming what happened.

The parent writes its own account of the child next to the trace
(``agent-process-N.json``, ``agent-N.log``). Not a sandbox: docs/TRUSTED_AGENTS.md.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from pytest_sabot.core.context import WORKER_MODEL_CALL_CAP, RunContext, ToolHandle
from pytest_sabot.core.frameworks import (
    ADAPTERS,
    FrameworkAdapter,
)
from pytest_sabot.core.models.cells import WaveSpec, expand
from pytest_sabot.core.models.mapping import load_mapping
from pytest_sabot.core.models.outside import OutsideRow
from pytest_sabot.core.models.trace import REPORTED_EVENT_KINDS
from pytest_sabot.core.registry import importable
from pytest_sabot.core.secrets import scrub_text
from pytest_sabot.trusted.agent_row import render_shipped
from pytest_sabot.trusted.channel import Refusal
from pytest_sabot.trusted.protocol import ModelEndpoint, Start, ToolSpec
from pytest_sabot.trusted.proxy import MODEL_REQUEST, carried
from pytest_sabot.trusted.report import ProcessReport
from pytest_sabot.trusted.sabot_child import (
    HANDOFF,
    HARNESS_PREFIX,
    REPORT,
    REVIEWER_PROMPT,
    WORKER_PROMPT,
)
from pytest_sabot.trusted.sandbox import Sandbox, unavailable
from pytest_sabot.trusted.supervisor import (
    Supervisor,
    TargetError,
    Unreadable,
    child_environment,
)
from pytest_sabot.trusted.target import is_target

NAME = "local_agent"
CONFIG = "default"
AGENT_OPTION = "--sabot-agent"
TRUST_OPTION = "--trust-local-agent"
BINDING = "pytest_sabot.trusted.sabot_child:binding"
MAPPING = Path(__file__).with_name("local_agent.yaml")
MCP_NAME = "mcp_client"
MCP_MAPPING = Path(__file__).with_name("mcp_client.yaml")
AGENTS = ("worker", "reviewer")
DEFAULT_DEADLINE_S = 300.0
GRACE_S = 2.0
MARGIN_S = 3.0
"""Seconds the agent's deadline leaves before the attempt's own time limit, so the
supervisor (not the harness's thread timeout) ends an agent that runs too long."""


def _http_error(status: int, message: str, code: str) -> dict[str, Any]:
    body = {"error": {"message": message, "type": "sabot_error", "param": None, "code": code}}
    return {"status": status, "content_type": "application/json", "body": json.dumps(body)}


class AgentProcessExited(Exception):
    """The agent's process ended without returning (a crash, an exit, a protocol breach)."""


class AgentFailed(Exception):
    """The agent's callable raised."""


@dataclasses.dataclass(frozen=True)
class _Configured:
    target: str
    deadline_s: float
    row: str = NAME
    mapping: Path = MAPPING
    pass_env: tuple[str, ...] = ()
    sandbox: Sandbox | None = None
    rendered: Path | None = None  # the folder of the shipped mapping written for the row


_configured: _Configured | None = None


def refusal(target: str | None, trusted: bool) -> str | None:
    """Why the options cannot run (None when they can): checked before anything runs."""
    if target is None:
        return None
    if not is_target(target):
        return (f"{AGENT_OPTION}={target}: expected 'package.module:callable' (a function "
                "run(context) of your own package)")
    if not trusted:
        return (f"{AGENT_OPTION}={target} runs your own code as the pipeline, in a child "
                f"process of this session; add {TRUST_OPTION} to say you trust it (it is "
                "supervised, not sandboxed: docs/TRUSTED_AGENTS.md)")
    module = target.partition(":")[0]
    if not importable(module.split(".")[0]):
        return (f"{AGENT_OPTION}={target}: no module {module.split('.')[0]!r} can be "
                "imported from here (is your package on the path, or PYTHONPATH set?)")
    return None


def deadline_for(attempt_timeout_s: float) -> float:
    """The agent's real-time deadline: inside the attempt's time limit (0: no limit)."""
    if attempt_timeout_s <= 0:
        return DEFAULT_DEADLINE_S
    if attempt_timeout_s > 2 * (GRACE_S + MARGIN_S):
        return attempt_timeout_s - GRACE_S - MARGIN_S
    return attempt_timeout_s / 2


def adapter() -> FrameworkAdapter:
    """The declaration of the trusted agent's row: no packages of its own, its own mapping
    (the row's name and mapping as this session configured them)."""
    row, mapping = (NAME, MAPPING) if _configured is None else \
        (_configured.row, _configured.mapping)
    return FrameworkAdapter(
        name=row,
        run="pytest_sabot.trusted.sabot:run",
        mapping=str(mapping.resolve()),
        cost_per_run={CONFIG: (6, 2500, 400)},
    )


def mcp_adapter() -> FrameworkAdapter:
    """The declaration of an MCP client's row (``sabot mcp CELL_ID``): the client is the
    pipeline, served by ``pytest_sabot.commands.mcp``; its reports are scored by
    ``mcp_client.yaml``, the same acts as a trusted agent's."""
    return FrameworkAdapter(
        name=MCP_NAME,
        run="pytest_sabot.commands.mcp:pipeline",
        mapping=str(MCP_MAPPING),
        cost_per_run={CONFIG: (6, 2500, 400)},
    )


def register(target: str, attempt_timeout_s: float, *, row: str = NAME,
             mapping: Path | None = None, pass_env: tuple[str, ...] = ()) -> FrameworkAdapter:
    """Register the row for this process (every process of the session calls this):
    ``row`` its name (checked by the caller, trusted/agent_row.py), ``mapping`` the file
    that scores it (None: the shipped one, written under the row's name), ``pass_env``
    the variables its child is given."""
    global _configured
    rendered = None
    if mapping is None and row != NAME:
        rendered = Path(tempfile.mkdtemp(prefix="sabot-agent-row-"))
        mapping = render_shipped(MAPPING, row, rendered)
    _configured = _Configured(target, deadline_for(attempt_timeout_s), row=row,
                              mapping=MAPPING if mapping is None else mapping,
                              pass_env=pass_env, rendered=rendered)
    ADAPTERS.register(row, "pytest_sabot.trusted.sabot:adapter", origin=AGENT_OPTION)
    return adapter()


def configured_row() -> str:
    """The trusted agent's row in this process (``local_agent`` when none is registered)."""
    return NAME if _configured is None else _configured.row


def use_sandbox(hidden: tuple[Path, ...], *, check: bool) -> str | None:
    """Run this session's children in the sandbox (``--sabot-sandbox``), with ``hidden``
    out of their view. ``check``: start one first and say why the machine cannot provide
    it (the message of a usage error; nothing is changed then). None when it is set."""
    global _configured
    if _configured is None:
        return f"--sabot-sandbox sandboxes the child of {AGENT_OPTION}; give one"
    sandbox = Sandbox(hidden=hidden)
    if check:
        problem = unavailable(sandbox, child_environment(_configured.pass_env,
                                                         extra_path=(os.getcwd(),)))
        if problem is not None:
            return f"--sabot-sandbox: {problem}; nothing was run"
    _configured = dataclasses.replace(_configured, sandbox=sandbox)
    return None


def forget() -> None:
    """Undo :func:`register` (the session has ended)."""
    global _configured
    row = configured_row()
    if _configured is not None and _configured.rendered is not None:
        shutil.rmtree(_configured.rendered, ignore_errors=True)
    _configured = None
    if row in ADAPTERS.names() and ADAPTERS.entry(row).origin == AGENT_OPTION:
        ADAPTERS.unregister(row)


def agent_wave(std: Any, name: str = NAME, what: str = "a trusted local agent",
               target: str | None = None) -> Any:
    """The loaded wave with its rows replaced by one row of a pipeline outside the harness
    (the trusted agent's, named ``name``, its callable ``target``; or an MCP client's):
    the same tasks, operators, seeds, anchors and rules, scored with that row's mapping. A
    candidate matrix of its own, never a row of the standard's wave."""
    spec: WaveSpec = std.wave
    seeds = list(dict.fromkeys(cell.seed for cell in std.cells))
    label = spec.name or f"wave{spec.wave}"
    outside = OutsideRow(row=name, config=CONFIG, target=target,
                         pipeline="MCP client" if name == MCP_NAME else "trusted local agent")
    ran = f"{what} {target}" if target else what
    wave = WaveSpec.model_validate({
        **spec.model_dump(),
        "name": f"{label}-{name.replace('_', '-')}",
        "candidate": True,
        "title": f"{spec.title}, run by {ran} ({name}-{CONFIG})",
        "frameworks": [name],
        "configs": [CONFIG],
        "carve_outs": [],
    })
    mappings = {name: load_mapping(std.root, name, std.rules.version)}
    return dataclasses.replace(std, wave=wave, cells=expand(wave, seeds), mappings=mappings,
                               outside=outside)


# --------------------------------------------------------------------------- one run


class RunHandlers:
    """Answers the requests of a pipeline outside the harness (a trusted agent's child, an
    MCP client) with the run context."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.tools: dict[str, ToolHandle] = {tool.name: tool for tool in ctx.tools}
        self.http: httpx.Client = ctx.http_client()

    def call_tool(self, name: str, arguments: dict[str, Any] | Unreadable) -> Any:
        if isinstance(arguments, Unreadable):
            raise Refusal("invalid", f"the arguments of {name} are not JSON: {arguments!r}")
        self.ctx.sync_model_calls()
        if name.startswith(HARNESS_PREFIX):
            return self._harness(name, arguments)
        handle = self.tools.get(name)
        if handle is None:
            raise Refusal("invalid", f"no tool named {name!r}; the catalog has "
                          f"{', '.join(sorted(self.tools)) or 'no tools'}")
        return handle.invoke(arguments)

    def _harness(self, name: str, args: dict[str, Any]) -> Any:
        ctx = self.ctx
        try:
            if name == WORKER_PROMPT:
                m = ctx.worker_prompt(int(args.get("round", 0)), str(args.get("feedback", "")))
                return {"system": m.system, "user": m.user}
            if name == REVIEWER_PROMPT:
                m = ctx.reviewer_prompt(str(args["delivered"]), int(args.get("round", 0)))
                return {"system": m.system, "user": m.user}
            if name == HANDOFF:
                return ctx.handoff(str(args["sender"]), str(args["receiver"]), str(args["text"]))
            if name == REPORT:
                return {"seq": self._report(args)}
            if name == MODEL_REQUEST:
                return self._model(args)
        except (KeyError, TypeError, ValueError) as exc:
            raise Refusal("invalid", f"{name}: {type(exc).__name__}: {exc}") from None
        raise Refusal("invalid", f"{name!r} is no request of the harness")

    def _model(self, args: dict[str, Any]) -> dict[str, Any]:
        """One model request a sandboxed child carried over the pipe: forwarded to this
        run's scoped endpoint when it names a route of that door and one of this run's
        credentials; answered with the gateway's status, content type and body."""
        method, path = str(args.get("method", "")), str(args.get("path", ""))
        token = str(args.get("authorization", "")).removeprefix("Bearer ").strip()
        endpoints = {key: url for url, key in
                     (self.ctx.scoped_endpoint(agent) for agent in AGENTS)}
        if not carried(method, path):
            return _http_error(404, f"no route for {method} {path} here", "unknown_route")
        if token not in endpoints:
            return _http_error(401, "this credential opens no run here",
                               "sabot_bad_credential")
        origin = endpoints[token].removesuffix("/v1")
        try:
            response = self.http.request(
                method, origin + path.split("?", 1)[0], content=str(args.get("body", "")),
                headers={"Authorization": f"Bearer {token}",
                         "Content-Type": "application/json"},
            )
        except httpx.HTTPError as exc:
            return _http_error(502, f"the gateway could not be reached: {type(exc).__name__}",
                               "sabot_gateway_unreachable")
        return {"status": response.status_code,
                "content_type": response.headers.get("content-type", "application/json"),
                "body": response.text}

    def _report(self, args: dict[str, Any]) -> int:
        kind = str(args.get("kind", ""))
        if kind not in REPORTED_EVENT_KINDS:
            raise Refusal("invalid", f"a trusted agent reports one of "
                          f"{', '.join(REPORTED_EVENT_KINDS)}, not {kind!r}")
        data = args.get("data") or {}
        if not isinstance(data, dict):
            raise Refusal("invalid", f"the data of a {kind} report is an object, got {data!r}")
        seq = self.ctx.trace.next_seq
        self.ctx.trace.emit(kind, str(args.get("component", "agent")),
                            str(args.get("text", "")), **data)
        return seq

    def sleep(self, ms: int) -> None:
        raise Refusal("invalid", "a Sabot run keeps no clock of its own to wait on")


def start_message(ctx: RunContext, *, via_pipe: bool = False) -> Start:
    """Everything the child is given: the public task, capabilities, catalog, endpoints
    (``via_pipe``: a sandboxed child carries its model calls over the pipe)."""
    first = ctx.worker_prompt(0)
    return Start(
        view={
            "task": {"system": first.system, "user": first.user},
            "config": ctx.cell.config,
            "capabilities": {
                "agents": list(AGENTS),
                "report_kinds": list(REPORTED_EVENT_KINDS),
                "max_tool_model_calls": WORKER_MODEL_CALL_CAP,
                "flags_protocol": ctx.flags_protocol,
            },
        },
        tools=[ToolSpec(name=t.name, description=t.description, parameters=t.parameters,
                        annotations={"role": t.role} if t.role else {})
               for t in ctx.tools],
        models=[_endpoint(ctx, agent, via_pipe) for agent in AGENTS],
    )


def _endpoint(ctx: RunContext, agent: str, via_pipe: bool) -> ModelEndpoint:
    """One agent's endpoint: the gateway's scoped door and a credential that opens this
    run's calls as that agent and nothing else (never the session secret, never a name of
    the cell)."""
    base_url, api_key = ctx.scoped_endpoint(agent)
    return ModelEndpoint(agent=agent, base_url=base_url, model=ctx.model_name,
                         api_key=api_key, via_pipe=via_pipe)


def _free(directory: Path, stem: str, suffix: str) -> Path:
    n = 1
    while (path := directory / f"{stem}-{n}{suffix}").exists():
        n += 1
    return path


REDACTED = "[REDACTED]"


class _Scrub:
    """The run's secrets (the gateway session's secret path segment, the agents'
    credentials) out of what the supervisor keeps: the child's log (an HTTP library may log
    its requests), its report and the error text that reaches the trace."""

    def __init__(self, ctx: RunContext) -> None:
        segment = urlsplit(ctx.base_url(AGENTS[0])).path.strip("/").split("/")[0]
        tokens = [ctx.scoped_endpoint(agent)[1] for agent in AGENTS]
        self.secrets = sorted({s for s in (segment, ctx.api_key, *tokens) if len(s) >= 6},
                              key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            value = value.replace(secret, REDACTED)
        return scrub_text(value)  # and every secret the process knows (SPEC I106)

    def file(self, path: Path) -> None:
        """The child's log, scrubbed in place once the child is gone (before the run's
        record is complete)."""
        try:
            raw = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
        clean = self.text(raw)
        if clean != raw:
            partial = path.with_name(path.name + ".partial")
            partial.write_text(clean, encoding="utf-8")
            partial.replace(path)


def _keep(report: ProcessReport, run_dir: Path, scrub: _Scrub) -> ProcessReport:
    clean = ProcessReport.model_validate_json(scrub.text(report.model_dump_json()))
    path = _free(run_dir, "agent-process", ".json")
    with path.open("x", encoding="utf-8") as handle:  # never overwritten
        handle.write(clean.model_dump_json(indent=2))
    return clean


def run(ctx: RunContext) -> None:
    """The trusted agent's pipeline: one supervised child process for this run."""
    if _configured is None:
        raise RuntimeError(f"a trusted agent's row runs only in a session given {AGENT_OPTION}")
    target = _configured.target
    scrub = _Scrub(ctx)
    log = _free(ctx.run_dir, "agent", ".log")
    sandbox = _configured.sandbox
    supervisor = Supervisor(target, log_path=log, binding=BINDING,
                            timeout_s=_configured.deadline_s, grace_s=GRACE_S,
                            pass_env=_configured.pass_env, sandbox=sandbox)
    report: ProcessReport | None = None
    try:
        try:
            supervisor.load()
        except TargetError as exc:
            raise AgentProcessExited(scrub.text(f"{AGENT_OPTION}={target}: {exc}")) from None
        outcome = supervisor.run(start_message(ctx, via_pipe=sandbox is not None),
                                 RunHandlers(ctx))
    finally:
        supervisor.close()
        scrub.file(log)
        if supervisor.report is not None:
            report = _keep(supervisor.report, ctx.run_dir, scrub)
    ctx.sync_model_calls()
    assert report is not None
    if outcome.finished is not None:
        ctx.emit(outcome.finished.output)
        return
    if outcome.failed is not None:
        raise AgentFailed(scrub.text(f"{target} raised {outcome.failed.error_type}: "
                                     f"{outcome.failed.message}"))
    if report.ended == "stopped_at_deadline":
        late = f"; {report.late_total} late request(s) refused" if report.late_total else ""
        raise TimeoutError(f"{target}: {report.detail}{late}")
    raise AgentProcessExited(f"{target}: {report.detail}")
