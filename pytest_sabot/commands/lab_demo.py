"""``sabot lab demo``: the three scripted controllers must produce their declared gates.

On the shipped ``lost-create-response`` scenario (the create response is lost after the
ticket was committed):

* ``builtin:naive`` fails, with a duplicate ticket (LS1);
* ``builtin:resilient`` passes;
* ``builtin:noop`` fails on completion rules only.

The demo succeeds only when the real engine produces every declared gate. These are
acceptance fixtures, not measurements of any model; ordinary failed runs still fail.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field
from rich.console import Console

from pytest_sabot.commands.lab_outputs import write_lab_run
from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.lab.controllers import CONTROLLERS
from pytest_sabot.lab.engine import execute
from pytest_sabot.lab.record import LabRun
from pytest_sabot.lab.scenario_load import load_scenario, resolve_scenario
from pytest_sabot.lab.vocabulary import GateOutcome

DEMO_SCENARIO = "helpdesk/lost-create-response"


@dataclass(frozen=True)
class Declared:
    """What one controller must produce on the demo scenario."""

    agent: str
    gate: GateOutcome
    rules: frozenset[str]  # violations that must be among those found
    only: Literal["completion", "safety"] | None  # every violation of this family, if set
    why: str


DECLARED: tuple[Declared, ...] = (
    Declared("builtin:naive", "fail", frozenset({"LS1"}), None,
             "retries the lost creation with a new operation key: a duplicate ticket"),
    Declared("builtin:resilient", "pass", frozenset(), None,
             "retries with the same operation key; reads back before notifying"),
    Declared("builtin:noop", "fail", frozenset({"LC1", "LC2", "LC3"}), "completion",
             "does nothing: fails the completion rules, breaks no safety rule"),
)


class DemoRow(FrozenModel):
    """One controller's declared and produced outcome."""

    agent: str = Field(description="The controller.")
    declared: GateOutcome = Field(description="The declared gate.")
    gate: GateOutcome = Field(description="The gate the engine produced.")
    rules: list[str] = Field(description="Rule ids of the violations found.")
    ok: bool = Field(description="Whether the produced outcome matches the declaration.")
    why: str = Field(description="Why this outcome is declared.")
    run: str | None = Field(None, description="Where the run record was written.")


def check(declared: Declared, record: LabRun) -> bool:
    """Whether a run produced what ``declared`` says."""
    found = {v.rule for v in record.gate.violations}
    kinds = {v.kind for v in record.gate.violations}
    return (record.gate.outcome == declared.gate and declared.rules <= found
            and (declared.only is None or kinds <= {declared.only}))


def run_demo(out_dir: Path | None = None, *,
             history: bool | str | Path = True) -> list[DemoRow]:
    """Run every declared controller on the demo scenario; one row each. With ``out_dir``
    each controller's run is written into ``out_dir/<controller>/`` like any run (run.json,
    report.html, junit.xml; recorded in the history unless ``history`` is False)."""
    path = resolve_scenario(DEMO_SCENARIO)
    scenario = load_scenario(path)
    rows: list[DemoRow] = []
    for declared in DECLARED:
        record, interrupt = execute(scenario, CONTROLLERS[declared.agent], source=str(path))
        run: str | None = None
        if out_dir is not None:
            done = write_lab_run(out_dir / declared.agent.replace("builtin:", ""), record,
                                 history=history)
            run = str(done.run)
            if done.history:
                print(done.history, file=sys.stderr)
        if interrupt is not None:
            raise interrupt
        rows.append(DemoRow(
            agent=declared.agent, declared=declared.gate, gate=record.gate.outcome,
            rules=[v.rule for v in record.gate.violations], ok=check(declared, record),
            why=declared.why, run=run,
        ))
    return rows


DEMO_TITLE = ("lab demo (scripted controllers: acceptance fixtures, not measurements of any "
              "model)")


def _mark(row: DemoRow) -> str:
    return "ok" if row.ok else "NOT AS DECLARED"


def print_demo(out: Console, rows: Sequence[DemoRow]) -> None:
    """The controllers' declared and produced gates, a table fitted to the console."""
    from pytest_sabot.report.terminal import Column, print_lines, print_table

    columns: tuple[Column[DemoRow], ...] = (
        Column("agent", lambda r: r.agent, 1),
        Column("declared", lambda r: r.declared, 1),
        Column("got", lambda r: r.gate, 1),
        Column("violations", lambda r: ",".join(r.rules) or "-", 2),
        Column("", _mark, 1),
        Column("why", lambda r: r.why, 3),
    )
    print_lines(out, [DEMO_TITLE])
    print_table(out, columns, rows, "sabot lab demo --json has every field")
    ok = all(r.ok for r in rows)
    print_lines(out, ["every declared gate produced" if ok else "a declared gate was not produced"])


def demo_text(rows: Sequence[DemoRow], width: int | None = None) -> str:
    """:func:`print_demo` as text, at ``width`` columns (the terminal's when None)."""
    from pytest_sabot.report.terminal import console

    out = console(width)
    with out.capture() as captured:
        print_demo(out, rows)
    return "\n".join(line.rstrip() for line in captured.get().splitlines())
