"""How many calls the embedded model recognised and refused, per row and for the session
(SPEC I151), read from the counted cells' traces (every attempt's).

A keyless row is a fixture of the embedded model; a row whose calls it refused is a row it
could not serve, and the reports say which agent's calls, why and what to do instead of
showing a number. Live and replayed sessions have no such count (their ``model_calls`` is
None).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from pytest_sabot.core.errors import REFUSED_MARK
from pytest_sabot.core.models.base import StrictModel
from pytest_sabot.core.records import cell_dir
from pytest_sabot.core.trace_io import every_trace

WHAT_TO_DO = (
    "keyless, the embedded model answers only the harness's own prompts: run the row with a "
    "live or local model (--sabot-model=local:<model>@<url>, docs/LIVE.md), or, as a keyless "
    "wiring check only (it measures the embedded reviewer, not your prompts), hand the agent "
    "the harness's prompt (docs/ADAPTERS.md, 'Keyless wiring check')"
)


class AgentCalls(StrictModel):
    """One agent's model calls in a row."""

    calls: int = Field(0, description="Model calls the agent made (every attempt).")
    refused: int = Field(0, description="Of them, calls the embedded model refused.")
    reason: str = Field("", description="The first refusal's text, if any.")


class RowCalls(StrictModel):
    """A row's model calls as the embedded model answered them."""

    recognised: int = Field(0, description="Calls the embedded model answered.")
    refused: int = Field(0, description="Calls it refused as not recognised.")
    agents: dict[str, AgentCalls] = Field(default_factory=dict, description="By agent.")

    def all_refused(self) -> dict[str, AgentCalls]:
        """The agents every one of whose calls was refused."""
        return {a: c for a, c in self.agents.items() if c.calls and c.refused == c.calls}


class ModelCalls(StrictModel):
    """The session's model calls as the embedded model answered them (keyless only)."""

    recognised: int = Field(0, description="Calls the embedded model answered.")
    refused: int = Field(0, description="Calls it refused as not recognised (SPEC I151).")
    rows: dict[str, RowCalls] = Field(default_factory=dict, description="By row.")


@dataclass
class _Agent:
    """One agent's count while the traces are read (``AgentCalls`` once they are)."""

    calls: int = 0
    refused: int = 0
    reason: str = ""


@dataclass
class _Row:
    """A row's count while the traces are read (``RowCalls`` once they are)."""

    recognised: int = 0
    refused: int = 0
    agents: dict[str, _Agent] = field(default_factory=dict)

    def done(self) -> RowCalls:
        return RowCalls(
            recognised=self.recognised, refused=self.refused,
            agents={name: AgentCalls(calls=a.calls, refused=a.refused, reason=a.reason)
                    for name, a in self.agents.items()},
        )


def _tally(path: Path, row: _Row) -> None:
    """Add one trace's model calls (a light read: only the model_call lines are parsed)."""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"model_call"' not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or event.get("kind") != "model_call":
            continue
        raw = event.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        agent = str(event.get("component") or "?")
        calls = row.agents.get(agent)
        if calls is None:
            calls = row.agents[agent] = _Agent()
        calls.calls += 1
        error = str(data.get("error") or "")
        if error.startswith(REFUSED_MARK):
            calls.refused += 1
            row.refused += 1
            calls.reason = calls.reason or error
        elif data.get("fixture"):
            row.recognised += 1


def model_calls(out_dir: Path, cells: Iterable[tuple[str, str]]) -> ModelCalls:
    """The tally over ``cells`` given as (cell id, row)."""
    rows: dict[str, _Row] = {}
    for cell_id, row_name in cells:
        row = rows.setdefault(row_name, _Row())
        for path in every_trace(cell_dir(out_dir, cell_id)):
            _tally(path, row)
    out = ModelCalls(rows={name: rows[name].done() for name in sorted(rows)})
    out.recognised = sum(r.recognised for r in out.rows.values())
    out.refused = sum(r.refused for r in out.rows.values())
    return out


def refusal_lines(calls: ModelCalls | None) -> list[str]:
    """The summary's lines: the session's count, each row's, and for a row with an agent
    whose every call was refused, why and what to do."""
    if calls is None:
        return []
    lines = [
        f"embedded model: {calls.recognised:,} calls recognised, {calls.refused:,} refused"
    ]
    for name, row in calls.rows.items():
        lines.append(f"  {name}: {row.recognised:,} recognised, {row.refused:,} refused")
        for agent, seen in row.all_refused().items():
            lines.append(
                f"    {name}: every call of agent {agent!r} was refused ({seen.calls:,}); "
                f"why: {seen.reason.split('. Keyless')[0]}"
            )
            lines.append(f"    what to do: {WHAT_TO_DO}")
    return lines
