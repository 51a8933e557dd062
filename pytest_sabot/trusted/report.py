"""How a supervised child process ran: the parent's own account, never the child's."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from pytest_sabot.core.models.base import FrozenModel

ProcessEnd = Literal[
    "finished",
    "failed",
    "exited",
    "stopped_at_deadline",
    "stopped_after_end",
    "cancelled",
    "protocol_error",
    "harness_error",
]
"""How the child's run ended, as the parent saw it.

* ``finished``: the callable returned and the process exited with 0;
* ``failed``: the callable raised (the process reported it and exited with 0);
* ``exited``: the process ended without a report, or with a non-zero status (a crash,
  ``sys.exit``, a signal);
* ``stopped_at_deadline``: the real-time deadline passed; the parent stopped the process;
* ``stopped_after_end``: the run itself ended (its budget or its own deadline was spent)
  and the process did not return within the grace; the parent stopped it;
* ``cancelled``: the parent was interrupted and stopped the process;
* ``protocol_error``: the child sent something that is not a protocol message;
* ``harness_error``: the parent failed while serving a request.
"""


class LateRequest(FrozenModel):
    """A request that arrived after the run stopped: refused, never carried out."""

    kind: Literal["tool_call", "sleep"] = Field(description="A tool call or a wait.")
    tool: str | None = Field(None, description="The tool, for a tool call.")
    arguments: dict[str, Any] | None = Field(
        None, description="Its arguments (None when they were not JSON)."
    )
    ms: int | None = Field(None, description="The wait, for a sleep.")


class ProcessReport(FrozenModel):
    """One supervised child process, from start to exit."""

    target: str = Field(description="The 'module:callable' that ran.")
    ended: ProcessEnd = Field(description="How the run ended (see ProcessEnd).")
    detail: str = Field("", description="What happened, in words (exit status, error).")
    exit_code: int | None = Field(
        None, description="The process's exit status; None when a signal ended it."
    )
    signal: str | None = Field(None, description="The signal that ended it, e.g. 'SIGKILL'.")
    timeout_s: float = Field(description="The real-time deadline of the run, in seconds.")
    requests: int = Field(0, description="Requests the parent served before the end.")
    late: list[LateRequest] = Field(
        default_factory=list,
        description="Requests that arrived after the deadline or the end of the run: refused, "
        "never carried out (the first 100).",
    )
    late_total: int = Field(0, description="How many late requests arrived in all.")
    log_file: str = Field(description="File name (in the run directory) of stdout+stderr.")
