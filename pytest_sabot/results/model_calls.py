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
from typing import TYPE_CHECKING, Any

from pydantic import Field

from pytest_sabot.core.errors import REFUSED_MARK
from pytest_sabot.core.models.base import StrictModel
from pytest_sabot.core.records import cell_dir
from pytest_sabot.core.trace_io import TRACE_FILE, every_trace
from pytest_sabot.results.forked import forked_map

if TYPE_CHECKING:
    from pytest_sabot.core.models.trace import Trace

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
class Tally:
    """A count while the traces are read: one cell's, or a row's (``RowCalls`` once read)."""

    recognised: int = 0
    refused: int = 0
    agents: dict[str, _Agent] = field(default_factory=dict)

    def done(self) -> RowCalls:
        return RowCalls(
            recognised=self.recognised, refused=self.refused,
            agents={name: AgentCalls(calls=a.calls, refused=a.refused, reason=a.reason)
                    for name, a in self.agents.items()},
        )

    def _agent(self, name: str) -> _Agent:
        calls = self.agents.get(name)
        if calls is None:
            calls = self.agents[name] = _Agent()
        return calls

    def count(self, agent: str, error: str, fixture: bool) -> None:
        """One model call of ``agent``: refused (its error says so), or recognised."""
        calls = self._agent(agent)
        calls.calls += 1
        if error.startswith(REFUSED_MARK):
            calls.refused += 1
            self.refused += 1
            calls.reason = calls.reason or error
        elif fixture:
            self.recognised += 1

    def add(self, part: Tally) -> None:
        """``part`` added, as if its traces had been read into this count."""
        self.recognised += part.recognised
        self.refused += part.refused
        for name, seen in part.agents.items():
            calls = self._agent(name)
            calls.calls += seen.calls
            calls.refused += seen.refused
            calls.reason = calls.reason or seen.reason


def _tally(path: Path, row: Tally) -> None:
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
        row.count(
            str(event.get("component") or "?"), str(data.get("error") or ""),
            bool(data.get("fixture")),
        )


def cell_tally(run_dir: Path, trace: Trace | None = None) -> Tally:
    """One cell's count, over every attempt's trace; ``trace`` is its final trace when it
    has been read already (it is counted as read, not read again)."""
    row = Tally()
    final = run_dir / TRACE_FILE
    for path in every_trace(run_dir):
        if trace is None or path != final:
            _tally(path, row)
            continue
        for event in trace.of_kind("model_call"):
            row.count(event.component or "?", event.data.error or "", event.data.fixture)
    return row


def model_calls(
    out_dir: Path,
    cells: Iterable[tuple[str, str]],
    processes: int | None = 1,
    known: dict[str, Tally] | None = None,
) -> ModelCalls:
    """The tally over ``cells`` given as (cell id, row). ``known`` holds the cells already
    counted (``score_dir`` counts each cell it reads); the others are read here, spread over
    ``processes`` forked processes (None: one per core). The tally is the same either way."""
    pairs = list(cells)
    counted = known or {}
    unread = [cid for cid, _row in pairs if cid not in counted]
    read = dict(zip(unread, forked_map(
        lambda cid: cell_tally(cell_dir(out_dir, cid)), unread, processes
    ), strict=True))
    rows: dict[str, Tally] = {}
    for cell_id, row_name in pairs:
        rows.setdefault(row_name, Tally()).add(counted.get(cell_id) or read[cell_id])
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
        f"embedded model: {calls.recognised:,} calls recognised, {calls.refused:,} refused "
        "(in the records the board counts, earlier sessions' included)"
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
