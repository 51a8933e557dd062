"""The task world: the run's workspace and the three task tools (data, check, write).

The tools are generic; what they answer comes from the task's public view. The harness
plants faults through a small ``ToolSeams`` object it implements:

* ``on_call`` is told of every call before anything happens (trace: tool_call);
* ``on_result`` sees every observation of the data and check tools before the agent does
  and returns what the agent is shown (O1 rewrites a data result, O2 replaces a check
  report with a bare success claim; trace: tool_result, injection);
* ``on_effect`` decides whether a write commits (O6 skips ``commit`` and still returns the
  usual success text; trace: effect).

Every exchange, as the agent saw it, is kept in ``Workspace.exchanges``, tagged with the
worker pass it belongs to, so ``tool_log_text()`` shows the reviewer only the exchanges
of the latest pass (a fault spent in the first pass does not haunt the second). A pass is
known either because the harness sets ``workspace.round = 1`` before the revise pass's
worker stage, or because a data-tool call follows a write in the log (a worker starting
over); the later of the two counts. The files
actually present are shown through ``listing_text``, and ``effects(required, artifact)``
gives the required-effects map ``evaluate_pass`` takes. The tool-log and listing texts
have a fixed format that the embedded model's review procedure reads back
(pytest_sabot.sim.procedures.common).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pytest_sabot.core.context import ToolHandle
from pytest_sabot.core.models.task import ToolRole, ToolSpec
from pytest_sabot.core.secrets import scrub_name, scrub_text
from pytest_sabot.tasks.checks import CHECKS
from pytest_sabot.tasks.contract import normalize_artifact
from pytest_sabot.tasks.loader import PublicView

TOOL_LOG_HEADER = "Tool calls of the worker, in order, with the observations it was shown:"
LISTING_HEADER = "Files present in the workspace after the worker stage:"
LISTING_EMPTY = "(no files)"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class ToolSeams(Protocol):
    """What the harness implements so operators can act on the tools. All methods are
    called synchronously from inside a tool call."""

    def on_call(self, tool: str, call_id: str, args: dict[str, Any]) -> None:
        """A tool was called with these arguments (record the request)."""
        ...

    def on_result(self, tool: str, role: ToolRole, call_number: int, observation: str) -> str:
        """The observation a data or check tool produced for its ``call_number``-th call
        (1-based, per tool); return what the agent is shown."""
        ...

    def on_effect(
        self, tool: str, call_id: str, target: str, commit: Callable[[], None], observation: str
    ) -> tuple[str, bool]:
        """A write tool wants to commit ``target``. Call ``commit()`` to make it happen
        (or don't, for O6) and return (observation shown to the agent, committed).
        ``observation`` is the tool's usual success text."""
        ...


class PassThroughSeams:
    """Seams that change nothing: every write commits, every observation passes."""

    def on_call(self, tool: str, call_id: str, args: dict[str, Any]) -> None:
        return None

    def on_result(self, tool: str, role: ToolRole, call_number: int, observation: str) -> str:
        return observation

    def on_effect(
        self, tool: str, call_id: str, target: str, commit: Callable[[], None], observation: str
    ) -> tuple[str, bool]:
        commit()
        return observation, True


@dataclass(frozen=True)
class Exchange:
    """One tool call as the worker experienced it."""

    tool: str
    call_id: str
    arguments: dict[str, Any]
    observation: str
    round: int = 0
    role: ToolRole | None = None


def _on_disk(name: str) -> str:
    """The name a file is committed under: a known secret in it (a pipeline that names a
    file after its key) is written as ``REDACTED``, so no file name holds one (SPEC I106)."""
    return scrub_name(name)


@dataclass
class Workspace:
    """The run's world: a directory the write tool commits files into, plus the log of
    every tool exchange."""

    run_dir: Path
    exchanges: list[Exchange] = field(default_factory=list)
    round: int = 0  # the harness sets 1 before the revise pass's worker stage

    def __post_init__(self) -> None:
        self.run_dir = Path(self.run_dir)
        self.root.mkdir(parents=True, exist_ok=True)

    @property
    def root(self) -> Path:
        return self.run_dir / "workspace"

    def files(self) -> dict[str, int]:
        """File name -> size in bytes, for every file actually present."""
        return {p.name: p.stat().st_size for p in sorted(self.root.iterdir()) if p.is_file()}

    def read(self, name: str) -> str | None:
        path = self.root / _on_disk(name)
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def write(self, name: str, content: str) -> int:
        """Commit a file; what reaches the disk is scrubbed of the process's known secrets
        (the world is a record too: SPEC I106)."""
        if not _SAFE_NAME.match(name):
            raise ValueError(f"not a plain file name: {name!r}")
        data = scrub_text(content).encode("utf-8")
        name = _on_disk(name)
        tmp = self.root / f".{name}.tmp"
        try:
            tmp.write_bytes(data)
            tmp.replace(self.root / name)
        except BaseException:  # a full disk, an interrupt: leave no half-written file
            tmp.unlink(missing_ok=True)
            raise
        return len(data)

    def committed(self, name: str, artifact: str) -> bool:
        """Whether ``name`` exists and holds the artifact (both normalized)."""
        present = self.read(name)
        return present is not None and normalize_artifact(present) == normalize_artifact(
            scrub_text(artifact)
        )

    def effects(self, required: list[str] | tuple[str, ...], artifact: str) -> dict[str, bool]:
        """The required-effects map evaluate_pass takes: each required file present with
        the final artifact's content."""
        return {name: self.committed(name, artifact) for name in required}

    def pass_of_next_call(self, role: ToolRole) -> int:
        """The pass a new call of a tool with this role belongs to."""
        last = self.exchanges[-1] if self.exchanges else None
        current = max(self.round, last.round if last else 0)
        wrote = any(ex.role == "write" and ex.round == current for ex in self.exchanges)
        return current + 1 if role == "data" and wrote else current

    def latest_round(self) -> int:
        return max([self.round, *(ex.round for ex in self.exchanges)])

    def round_exchanges(self, round: int | None = None) -> list[Exchange]:
        """The exchanges of one worker pass (default: the latest)."""
        wanted = self.latest_round() if round is None else round
        return [ex for ex in self.exchanges if ex.round == wanted]

    def tool_log_text(self, round: int | None = None) -> str:
        """The TOOL LOG of one worker pass (default: the latest)."""
        return format_tool_log(self.round_exchanges(round))

    def listing_text(self) -> str:
        return format_listing(self.files())


def format_tool_log(exchanges: list[Exchange]) -> str:
    """The TOOL LOG section body: one numbered call line, then its observation."""
    lines = [TOOL_LOG_HEADER]
    if not exchanges:
        lines.append("(no tool calls)")
    for i, ex in enumerate(exchanges, start=1):
        args = json.dumps(ex.arguments, ensure_ascii=False, sort_keys=True)
        lines.append(f"[{i}] {ex.tool} {args}")
        for obs_line in (ex.observation or "(empty observation)").splitlines() or [""]:
            lines.append(f"    {obs_line}")
    return "\n".join(lines)


def format_listing(files: dict[str, int]) -> str:
    """The WORKSPACE section body: one 'name  N bytes' line per file present."""
    lines = [LISTING_HEADER]
    if not files:
        lines.append(LISTING_EMPTY)
    lines += [f"{name}  {size} bytes" for name, size in files.items()]
    return "\n".join(lines)


class _Counter:
    def __init__(self) -> None:
        self.per_tool: dict[str, int] = {}
        self.total = 0

    def next(self, tool: str) -> tuple[str, int]:
        self.total += 1
        n = self.per_tool.get(tool, 0) + 1
        self.per_tool[tool] = n
        return f"{tool}#{n}", n


def _arg(args: dict[str, Any], name: str) -> str:
    value = args.get(name, "")
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _data_tool(view: PublicView, spec: ToolSpec) -> Callable[[dict[str, Any]], str]:
    assert spec.data is not None
    data = spec.data
    by_key = {k.strip().upper(): v for k, v in data.records.items()}

    def answer(args: dict[str, Any]) -> str:
        key = _arg(args, data.key).strip()
        found = by_key.get(key.upper())
        return found if found is not None else data.not_found.replace("{key}", key)

    return answer


def _check_tool(view: PublicView, spec: ToolSpec) -> Callable[[dict[str, Any]], str]:
    assert spec.check is not None
    check = spec.check
    fn = CHECKS[check.kind]

    def answer(args: dict[str, Any]) -> str:
        return fn(view, check.params, _arg(args, check.argument))

    return answer


def make_tools(view: PublicView, workspace: Workspace, seams: ToolSeams) -> list[ToolHandle]:
    """The task's data, check and write tools as framework-neutral handles."""
    counter = _Counter()
    handles: list[ToolHandle] = []
    for spec in view.tools:
        handles.append(_handle(view, spec, workspace, seams, counter))
    return handles


def _handle(
    view: PublicView, spec: ToolSpec, workspace: Workspace, seams: ToolSeams, counter: _Counter
) -> ToolHandle:
    compute: Callable[[dict[str, Any]], str] | None = None
    if spec.role == "data":
        compute = _data_tool(view, spec)
    elif spec.role == "check":
        compute = _check_tool(view, spec)

    def invoke(args: dict[str, Any]) -> str:
        pass_number = workspace.pass_of_next_call(spec.role)
        call_id, number = counter.next(spec.name)
        seams.on_call(spec.name, call_id, dict(args))
        if compute is not None:
            observation = seams.on_result(spec.name, spec.role, number, compute(args))
        else:
            observation = _write(spec, args, workspace, seams, call_id)
        workspace.exchanges.append(
            Exchange(spec.name, call_id, dict(args), observation, pass_number, spec.role)
        )
        return observation

    return ToolHandle(
        name=spec.name,
        description=spec.description,
        parameters=spec.parameters,
        invoke=invoke,
        role=spec.role,
        artifact_arguments=_artifact_arguments(view, spec),
    )


def _artifact_arguments(view: PublicView, spec: ToolSpec) -> Callable[[str], dict[str, Any]] | None:
    """How to apply a check or write tool to an artifact text (None for the data tool)."""
    if spec.check is not None:
        argument = spec.check.argument
        return lambda text: {argument: text}
    if spec.write is not None:
        w = spec.write
        if w.name_argument is None:
            return lambda text: {w.content_argument: text}
        name_argument = w.name_argument
        return lambda text: {name_argument: view.artifact, w.content_argument: text}
    return None


def _write(
    spec: ToolSpec, args: dict[str, Any], workspace: Workspace, seams: ToolSeams, call_id: str
) -> str:
    assert spec.write is not None
    w = spec.write
    name = w.fixed_name if w.fixed_name is not None else _arg(args, w.name_argument or "").strip()
    content = _arg(args, w.content_argument)
    if not _SAFE_NAME.match(name):
        return f"{spec.name}: refused, not a plain file name: {name!r}"
    size = len(content.encode("utf-8"))
    success = w.success.replace("{name}", name).replace("{bytes}", str(size))

    def commit() -> None:
        workspace.write(name, content)

    observation, _committed = seams.on_effect(spec.name, call_id, name, commit, success)
    return observation
