"""A trusted local agent in the lab: a user's callable in a supervised child process.

``python -m pytest_sabot.lab run SCENARIO --agent mypkg.agent:run --trust-local-agent``
runs ``run(context)`` in a child process started by :class:`pytest_sabot.trusted.Supervisor`.
The child builds the same :class:`~pytest_sabot.lab.agent.AgentContext` an in-process agent
gets, from the ``start`` message alone: the public task, the capabilities and the catalog.
Its ``call_tool`` and ``sleep`` travel to this process, where the engine's own context
routes them through the boundary, so the world, the evidence and the clock never leave
the harness. How the process ended is the harness's account:

* the callable returned: ``completed``, with its output;
* it raised: ``agent_error`` with ``Type: message``, as in process;
* the process crashed, exited or broke the protocol: ``agent_error``
  (``AgentProcessExited: ...`` with the exit status and the tail of its output);
* the real-time deadline passed: the process is stopped, ``deadline_exceeded``, and any
  request that still arrives is refused and listed in the record's ``process.late``;
* the run's own budget or virtual deadline is reached: the child's call raises
  ``LimitReached`` as in process, every later request is refused and listed as late, and
  a child that does not return within its grace is stopped.

The lab's gate applies unchanged: an unfinished execution is inconclusive unless a
violation was observed. Not a sandbox (see docs/TRUSTED_AGENTS.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.lab.agent import (
    AgentContext,
    AgentResult,
    AgentStopped,
    AgentView,
    HarnessFailure,
    LabAgent,
    LimitReached,
    RunClosed,
)
from pytest_sabot.lab.boundary import check_wait
from pytest_sabot.lab.observation import Observation
from pytest_sabot.trusted.channel import ChildChannel, Refusal
from pytest_sabot.trusted.context import Bound
from pytest_sabot.trusted.protocol import Start, ToolSpec
from pytest_sabot.trusted.report import ProcessReport
from pytest_sabot.trusted.supervisor import Supervisor, TargetError, Unreadable
from pytest_sabot.trusted.target import is_target

BINDING = "pytest_sabot.lab.trusted:child_binding"
DEFAULT_TIMEOUT_S = 300.0
TRUST_FLAG = "--trust-local-agent"


class AgentProcessExited(Exception):
    """The agent's process ended without returning (a crash, an exit, a protocol breach)."""


def is_local_agent(spec: str) -> bool:
    """Whether ``--agent`` names a user's callable (not a built-in controller)."""
    return not spec.startswith(("builtin:", "openai:")) and is_target(spec)


def next_log_path(directory: Path) -> Path:
    """``agent-N.log`` with the first free N: a log is never overwritten or renamed."""
    n = 1
    while (path := directory / f"agent-{n}.log").exists():
        n += 1
    return path


# --------------------------------------------------------------------------- parent side


class _Handlers:
    """Answers the child's requests with the engine's own context (the boundary)."""

    def __init__(self, context: AgentContext) -> None:
        self._context = context

    def call_tool(self, name: str, arguments: dict[str, Any] | Unreadable) -> Any:
        try:
            # Unreadable arguments reach the boundary as they are: it records their repr
            # and answers invalid_arguments, exactly as for an in-process agent.
            observation = self._context._call_tool(name, arguments)  # type: ignore[arg-type]
        except (LimitReached, HarnessFailure) as exc:
            raise _refusal(exc) from None
        return observation.model_dump(mode="json")

    def sleep(self, ms: int) -> None:
        try:
            self._context.sleep(ms)
        except (LimitReached, HarnessFailure) as exc:
            raise _refusal(exc) from None
        except ValueError as exc:
            raise Refusal("invalid", str(exc)) from None


def _refusal(exc: LimitReached | HarnessFailure) -> Refusal:
    """A boundary refusal for the child. A reached limit ends the run: the supervisor then
    refuses every later request itself (recorded as late) and stops the child if it does
    not return within its grace."""
    if isinstance(exc, RunClosed):
        return Refusal("closed", str(exc), final=True)
    if isinstance(exc, LimitReached):
        return Refusal("limit", str(exc), final=True)
    return Refusal("harness_failure", str(exc), final=True)


def _raised(error_type: str, message: str) -> Exception:
    """The child's exception under its own class name, so the record reads as in process."""
    name = error_type if error_type.isidentifier() else "AgentError"
    kind: type[Exception] = type(name, (Exception,), {"__module__": "agent"})
    return kind(message)


class TrustedLabAgent:
    """A user's ``module:callable`` as a lab agent, run in a supervised child process.

    Use as a context manager: entering starts the child and imports the target there
    (:class:`SabotDataError` naming ``--agent`` when it cannot), ``agent`` is the LabAgent
    to pass to ``run_scenario``, leaving stops the child if it still runs.
    """

    def __init__(self, target: str, *, log_dir: Path, timeout_s: float = DEFAULT_TIMEOUT_S,
                 grace_s: float = 5.0, pass_env: tuple[str, ...] = (),
                 cwd: Path | None = None) -> None:
        if not is_local_agent(target):
            raise SabotDataError("--agent", "agent", "'package.module:callable'", target)
        if timeout_s <= 0:
            raise SabotDataError("--agent-timeout", "agent-timeout", "a number of seconds > 0",
                                 timeout_s)
        self.target = target
        self.supervisor = Supervisor(target, log_path=next_log_path(log_dir), binding=BINDING,
                                     timeout_s=timeout_s, grace_s=grace_s, pass_env=pass_env,
                                     cwd=cwd)
        self.start_message: Start | None = None
        self.agent = LabAgent(target, "python", self._run, process=self._report)

    def __enter__(self) -> TrustedLabAgent:
        try:
            self.supervisor.load()
        except TargetError as exc:
            self.supervisor.close()
            raise SabotDataError("--agent", "agent", "an importable 'package.module:callable' "
                                 f"(it is imported in the agent's process): {exc}",
                                 self.target) from None
        except BaseException:  # an interrupt while loading: leave no child behind
            self.supervisor.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.supervisor.close()

    def _report(self) -> ProcessReport | None:
        return self.supervisor.report

    def _run(self, context: AgentContext) -> AgentResult:
        view = context.view
        self.start_message = Start(
            view=view.model_dump(mode="json"),
            tools=[ToolSpec(name=c.name, description=c.description, parameters=c.arguments,
                            annotations={"effect": c.effect,
                                         "idempotency": c.idempotency.support})
                   for c in view.catalog],
        )
        outcome = self.supervisor.run(self.start_message, _Handlers(context))
        report = outcome.report
        if outcome.finished is not None:
            return AgentResult(outcome.finished.output)
        if outcome.failed is not None:
            raise _raised(outcome.failed.error_type, outcome.failed.message)
        if report.ended == "stopped_at_deadline":
            raise AgentStopped("deadline_exceeded", report.detail)
        raise AgentProcessExited(report.detail)


# --------------------------------------------------------------------------- child side


def child_binding(start: Start, channel: ChildChannel) -> Bound:
    """In the child: the lab's AgentContext, built from the start message alone."""
    view = AgentView.model_validate(start.view)

    def call_tool(name: str, arguments: Any) -> Observation:
        try:
            answer = channel.call_tool(name, arguments)
        except Refusal as refusal:
            raise _lab_error(refusal) from None
        return Observation.model_validate(answer)

    def sleep(ms: int) -> None:
        check_wait(ms)
        try:
            channel.sleep(ms)
        except Refusal as refusal:
            raise _lab_error(refusal) from None

    def output(result: Any) -> str:
        if isinstance(result, AgentResult):
            return result.output
        return "" if result is None else str(result)

    return Bound(AgentContext(view, call_tool, sleep), output)


def _lab_error(refusal: Refusal) -> Exception:
    if refusal.reason == "closed":
        return RunClosed(refusal.message)
    if refusal.reason in ("limit", "deadline"):
        return LimitReached(refusal.message)
    if refusal.reason == "harness_failure":
        return HarnessFailure(refusal.message)
    return ValueError(refusal.message)
