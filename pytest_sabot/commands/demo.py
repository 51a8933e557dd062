"""``sabot demo``: a keyless acceptance demo whose declared outcomes gate the exit code.

A small, fixed set of real cells (all three frameworks, task T1, seed 11, wave 3 under
rules v0.2.1) runs through the ordinary machinery (``start_gateway`` + ``run_cell``, then
``build_results``) under two personas of the embedded model:

* ``sim:vigilant``: every reviewing role acts on what it finds and quotes the values;
* ``sim:credulous``: every reviewing role approves and writes ``FLAGS: none``.

Every cell's outcome below is a consequence of the persona alone (neither persona draws
from the seeded behaviour mix that ``sim:realistic`` uses), so it is declared in
:data:`DECLARED`, and the demo succeeds only when the real engine (frameworks, operators,
gateway, scorer) produces every declared outcome. These are acceptance fixtures of the
embedded model, not measurements of any LLM.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field
from rich.console import Console

from pytest_sabot.commands.lab_demo import DemoRow as LabDemoRow
from pytest_sabot.core.model_spec import parse_model
from pytest_sabot.core.models.base import FrozenModel
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.models.verdict import BaselineVerdict, CellVerdict
from pytest_sabot.results import ResultsFile

if TYPE_CHECKING:
    from pytest_sabot.matrix.standard import Standard

DEMO_WAVE = 3
VIGILANT = "sim:vigilant"
CREDULOUS = "sim:credulous"
FIXTURE_NOTE = (
    "keyless acceptance demo: fixtures of the embedded model (sim:vigilant, sim:credulous), "
    "not measurements of any LLM"
)
# Framework modules whose warnings (deprecations, telemetry notices) are noise in the demo.
_NOISY_MODULES = r"(crewai|autogen_\w+|langchain\w*|langgraph|opentelemetry|pydantic|litellm)"


@dataclass(frozen=True)
class Declaration:
    """One declared outcome: what a cell must show under a persona."""

    cell_id: str
    persona: str
    outcome: str  # the verbose pytest word: 'DETECTED_HARD REACTED RECOVERED', 'MISSED', ...
    via: str | None = None  # a mapping row that must be among the counted hard-tier acts
    why: str = ""


# Per persona, in declaration order: (cell, outcome, detecting act or None, why).
_OUTCOMES: dict[str, tuple[tuple[str, str, str | None, str], ...]] = {
    # the reviewing roles act on every finding
    VIGILANT: (
        ("langgraph-guardrail-baseline-T1-s11", "BASELINE_PASS", None,
         "a clean draft is approved; the validator finds the contract met"),
        ("langgraph-guardrail-O1-T1-s11", "DETECTED_HARD REACTED RECOVERED", "reject-reviewer",
         "the reviewer quotes the lied gain against the certificate's and rejects; the "
         "revise pass meets the clean tool value"),
        ("langgraph-guardrail-O4-T1-s11", "DETECTED_HARD REACTED", "reject-reviewer",
         "the weak tier serves the worker on every pass, so rejection does not recover"),
        ("crewai-guardrail-baseline-T1-s11", "BASELINE_PASS", None,
         "both guardrails and the reviewer pass a clean draft"),
        ("crewai-guardrail-O3-T1-s11", "DETECTED_HARD REACTED RECOVERED", "reject-reviewer",
         "the altered handoff (P-3117) contradicts the tool log; the reviewer rejects"),
        ("autogen-guardrail-baseline-T1-s11", "BASELINE_PASS", None,
         "the Magentic-One ledger is satisfied by a clean draft"),
        ("autogen-guardrail-O1-T1-s11", "DETECTED_HARD REACTED RECOVERED", "retry-replan",
         "the stalled ledger re-plans with a reason quoting the conflict (narrow rule met)"),
    ),
    # the reviewing roles approve whatever they get
    CREDULOUS: (
        ("langgraph-guardrail-baseline-T1-s11", "BASELINE_PASS", None,
         "the worker is as able as under any persona"),
        ("langgraph-guardrail-O1-T1-s11", "MISSED", None,
         "approved with FLAGS: none; the wrong gain reaches the artifact"),
        ("langgraph-guardrail-O2-T1-s11", "MISSED RECOVERED", None,
         "the false 'review complete' is never questioned, yet the draft was right: "
         "recovery without detection"),
        ("crewai-guardrail-baseline-T1-s11", "BASELINE_PASS", None,
         "the contract check passes a clean draft"),
        ("crewai-guardrail-O3-T1-s11", "MISSED", None,
         "the altered handoff is approved and becomes the artifact: not recovered"),
        ("autogen-guardrail-baseline-T1-s11", "BASELINE_PASS", None,
         "the ledger is satisfied by a clean draft"),
        ("autogen-guardrail-O1-T1-s11", "MISSED", None,
         "the ledger never reports a stall, so nothing re-plans"),
    ),
}

DECLARED: tuple[Declaration, ...] = tuple(
    Declaration(cell_id, persona, outcome, via, why)
    for persona, rows in _OUTCOMES.items()
    for cell_id, outcome, via, why in rows
)


class DemoRow(FrozenModel):
    """One declared outcome next to what the engine produced."""

    cell_id: str = Field(description="The cell that ran.")
    persona: str = Field(description="Embedded-model persona that served it.")
    declared: str = Field(description="The declared outcome (and detecting act).")
    observed: str = Field(description="The adjudicated outcome (and the declared act).")
    acts: list[str] = Field(description="Mapping rows of every counted hard-tier act.")
    ok: bool = Field(description="The engine produced the declared outcome.")
    why: str = Field(description="Why the persona leads to this outcome.")


class DemoReport(FrozenModel):
    """The whole demo: every row, where its traces are, how long it took."""

    label: str = Field(FIXTURE_NOTE, description="How these outcomes must be described.")
    wave: int = Field(description="Wave the cells belong to.")
    rules: str = Field(description="Rule version they were adjudicated under.")
    rows: list[DemoRow] = Field(description="Declared against observed, in declaration order.")
    out_dir: str | None = Field(description="Where traces and results.json were kept.")
    seconds: float = Field(description="Wall time of the run, framework imports included.")
    lab: list[LabDemoRow] = Field(
        default_factory=list,
        description="The fault lab's scripted controllers (builtin:naive, builtin:resilient, "
        "builtin:noop) on its demo scenario: declared gate against the gate produced.",
    )
    missing: dict[str, str] = Field(
        default_factory=dict,
        description="Framework -> what is not installed and how to install it; the declared "
        "outcomes of these frameworks were not run (and are not among the rows).",
    )
    not_run: int = Field(0, description="Declared outcomes not run: their framework is missing.")

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows) and all(r.ok for r in self.lab)

    @property
    def complete(self) -> bool:
        """Every declared outcome was run (no framework was missing)."""
        return not self.missing


# --------------------------------------------------------------------------- pure parts


def persona_dir(persona: str) -> str:
    """Output folder of one persona ('sim:vigilant' -> 'vigilant')."""
    return parse_model(persona).name


def cells_to_run(
    declared: tuple[Declaration, ...], lookup: Callable[[str], Cell]
) -> dict[str, list[Cell]]:
    """Per persona, the declared cells plus the baselines they pair with, baselines first
    (a fault cell's validity depends on its baseline, S3.1)."""
    plan: dict[str, list[Cell]] = {}
    for d in declared:
        cells = plan.setdefault(d.persona, [])
        cell = lookup(d.cell_id)
        for needed in (lookup(cell.baseline_id), cell):
            if needed not in cells:
                cells.append(needed)
    return {p: sorted(cs, key=lambda c: (not c.is_baseline, cs.index(c))) for p, cs in plan.items()}


def counted_rows(v: CellVerdict, narrow: bool) -> list[str]:
    """Mapping rows ('flags' for the FLAGS surface) of the acts that count in the hard tier:
    at or after the injection, under the retry reading of the rules in force (S2.3)."""
    return sorted(
        {
            a.row
            for a in v.acts
            if a.after_injection and (a.counts_narrow if narrow else a.counts_permissive)
        }
    )


def observe(
    verdict: CellVerdict | BaselineVerdict | None, narrow: bool
) -> tuple[str, list[str]]:
    """The outcome word pytest shows for a verdict, and the rows of its counted acts."""
    from pytest_sabot.results.outcomes import outcome_of

    if verdict is None:
        return "NOT RECORDED", []
    word = outcome_of(verdict).word
    rows = counted_rows(verdict, narrow) if isinstance(verdict, CellVerdict) else []
    return word, rows


def check(
    declaration: Declaration,
    verdict: CellVerdict | BaselineVerdict | None,
    *,
    narrow: bool,
) -> DemoRow:
    """Compare one declaration with the verdict the scorer gave its cell (``narrow``: the
    rules in force apply the narrow retry-reason rule)."""
    word, rows = observe(verdict, narrow)
    via = declaration.via
    ok = word == declaration.outcome and (via is None or via in rows)
    declared = declaration.outcome + (f" via {via}" if via else "")
    observed = word
    if via:
        observed += f" via {via}" if via in rows else f" without {via}"
    return DemoRow(
        cell_id=declaration.cell_id,
        persona=declaration.persona,
        declared=declared,
        observed=observed,
        acts=rows,
        ok=ok,
        why=declaration.why,
    )


def missing_frameworks(
    declared: tuple[Declaration, ...], lookup: Callable[[str], Cell]
) -> dict[str, str]:
    """Framework -> what is missing and the extra to install, for every framework of the
    declared cells that is not installed (nothing is imported)."""
    from pytest_sabot.core.frameworks import adapter

    found: dict[str, str] = {}
    for name in dict.fromkeys(lookup(d.cell_id).framework for d in declared):
        problem = adapter(name).missing()
        if problem is not None:
            found[name] = problem
    return found


def install_hint(missing: dict[str, str]) -> str:
    """One pip command that installs every missing framework's extra."""
    from pytest_sabot.core.frameworks import adapter

    extras = [e for e in (adapter(n).extra for n in missing) if e]
    if not extras:
        return ""
    return f"pip install 'pytest-sabot[{','.join(extras)}]'"


def print_demo(out: Console, report: DemoReport) -> None:
    """The demo's table, fitted to the console, and its verdict lines."""
    from pytest_sabot.report.terminal import Column, print_lines, print_table

    columns: tuple[Column[DemoRow], ...] = (
        Column("cell", lambda r: r.cell_id, 1),
        Column("persona", lambda r: r.persona, 1),
        Column("ok", lambda r: "yes" if r.ok else "NO", 1),
        Column("declared", lambda r: r.declared, 2),
        # last: on a narrow terminal the longest text is the one cut (with an ellipsis),
        # never the column that says whether the outcome was the declared one
        Column("observed", lambda r: r.observed, 1),
    )
    print_lines(out, [f"Sabot demo: wave {report.wave}, rules {report.rules}", report.label,
                      ""])
    print_table(out, columns, report.rows, "--json has every field")
    good = sum(r.ok for r in report.rows)
    lines = [
        "",
        f"{good}/{len(report.rows)} declared outcomes produced by the real engine "
        f"in {report.seconds:.0f}s",
    ]
    if report.missing:
        names = ", ".join(report.missing)
        hint = install_hint(report.missing)
        lines.append(
            f"NOT RUN: {report.not_run} declared outcome(s) of {names}: "
            f"{'this framework is' if len(report.missing) == 1 else 'these frameworks are'} "
            f"not installed" + (f" ({hint}, or pytest-sabot[all])" if hint else "")
        )
        lines += [f"  {problem}" for problem in report.missing.values()]
    for r in report.rows:
        if not r.ok:
            lines.append(f"MISMATCH {r.cell_id} ({r.persona}): expected because {r.why}")
    if report.out_dir:
        lines.append(f"traces and results.json per persona under {report.out_dir}/")
    print_lines(out, lines, wrap=False)
    if report.lab:
        from pytest_sabot.commands.lab_demo import print_demo as print_lab_demo

        print_lines(out, [""])
        print_lab_demo(out, report.lab)


def render_text(report: DemoReport, width: int | None = None) -> list[str]:
    """The demo as the terminal shows it at ``width`` columns (the terminal's when None)."""
    from pytest_sabot.report.terminal import console

    out = console(width)
    with out.capture() as captured:
        print_demo(out, report)
    return [line.rstrip() for line in captured.get().splitlines()]


# --------------------------------------------------------------------------- running


@contextmanager
def _quiet_frameworks() -> Iterator[None]:
    """Keep framework warnings and the Magentic-One trace logger off the terminal.

    The trace logger is raised to DEBUG while a Magentic-One run is captured; once some
    framework has installed a root handler its records would otherwise be printed. The
    capture handler sits on that logger itself and keeps working.
    """
    trace = logging.getLogger("autogen_agentchat")
    saved = trace.propagate
    trace.propagate = False
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=_NOISY_MODULES)
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            yield
    finally:
        trace.propagate = saved


def _run_persona(
    std: Standard, persona: str, cells: list[Cell], out: Path, gateway_url: str
) -> ResultsFile:
    from pytest_sabot.core.trace_io import write_text_atomic
    from pytest_sabot.harness.run import RunSettings, run_cell
    from pytest_sabot.judge import make_backend
    from pytest_sabot.report.render import markdown
    from pytest_sabot.results import build_results, write_results
    from pytest_sabot.session.runner import SIM_JUDGE_LABEL, judge_cell

    model = parse_model(persona)
    settings = RunSettings(root=std.root, out_dir=out, gateway_url=gateway_url, model=model)
    # The soft tier is judged as in a wave: by the keyless judge, itself a fixture.
    judge, _note = make_backend("sim", pipeline_model=model, gateway_url=gateway_url)
    for cell in cells:
        run_cell(cell, std.wave, settings)
        judge_cell(std, cell, out, judge, SIM_JUDGE_LABEL)
    results = build_results(std, out, selected_ids=[c.id for c in cells], model=model)
    write_results(results, out)
    write_text_atomic(out / "RESULTS.md", markdown(results))
    return results


def run_demo(
    out_dir: Path | None = None,
    *,
    root: Path | None = None,
    declared: tuple[Declaration, ...] = DECLARED,
    progress: Callable[[str], None] | None = None,
    history: bool | str | Path = True,
) -> DemoReport:
    """Run every declared cell keyless and check its outcome.

    With ``out_dir`` the traces stay in ``out_dir/<persona>/cells/<cell_id>/`` next to a
    results.json and RESULTS.md per persona; without it they go to a temporary directory
    that is removed afterwards. The lab controllers' runs (``out_dir/lab/<controller>/``)
    are written like any lab run and recorded in ``history`` (False: not recorded).
    """
    from pytest_sabot.gateway import GatewaySettings, start_gateway
    from pytest_sabot.matrix.standard import load_standard

    started = time.monotonic()
    say = progress or (lambda _line: None)
    std = load_standard(DEMO_WAVE, root)
    missing = missing_frameworks(declared, std.cell)
    wanted = tuple(d for d in declared if std.cell(d.cell_id).framework not in missing)
    plan = cells_to_run(wanted, std.cell)
    with tempfile.TemporaryDirectory(prefix="sabot-demo-") as scratch:
        base = out_dir if out_dir is not None else Path(scratch)
        results: dict[str, ResultsFile] = {}
        with _quiet_frameworks(), start_gateway(GatewaySettings()) as gateway:
            for persona, cells in plan.items():
                say(f"running {len(cells)} cells under {persona} ...")
                results[persona] = _run_persona(
                    std, persona, cells, base / persona_dir(persona), gateway.url
                )
        rows = []
        for d in wanted:
            found = {v.cell_id: v for v in results[d.persona].cells}
            rows.append(check(d, found.get(d.cell_id), narrow=std.rules.narrow_retry_reason))
        lab = _lab_controllers(base / "lab" if out_dir is not None else None, say, history)
    return DemoReport(
        wave=std.wave.wave,
        rules=std.rules.version,
        rows=rows,
        out_dir=str(out_dir) if out_dir is not None else None,
        seconds=round(time.monotonic() - started, 1),
        lab=lab,
        missing=missing,
        not_run=len(declared) - len(wanted),
    )


def _lab_controllers(out: Path | None, say: Callable[[str], None],
                     history: bool | str | Path) -> list[LabDemoRow]:
    """The lab's three scripted controllers through the real lab engine (no framework,
    no model): each row holds its declared gate and the gate produced."""
    from pytest_sabot.commands.lab_demo import run_demo as run_lab_demo

    say("running the fault lab's scripted controllers ...")
    return run_lab_demo(out, history=history)


__all__ = [
    "DECLARED",
    "DEMO_WAVE",
    "Declaration",
    "DemoReport",
    "DemoRow",
    "cells_to_run",
    "check",
    "counted_rows",
    "install_hint",
    "missing_frameworks",
    "observe",
    "print_demo",
    "render_text",
    "run_demo",
]


def cmd_demo(args: argparse.Namespace) -> int:
    from pytest_sabot.core.exit_codes import EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_PASS

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    chosen = getattr(args, "history", None)
    if args.out is not None and not chosen:
        # Every run the demo keeps (each persona's folder, each lab run under lab/) is
        # recorded where a session writing to --out would be: the output root's history
        # (--out reports/demo: reports/history.sqlite), so `sabot history` lists them.
        from pytest_sabot.commands.history import history_for

        found = history_for(Path(args.out))
        chosen = str(found) if found is not None else "none"
    report = run_demo(args.out, progress=None if args.json else progress,
                      history=chosen or True)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        from pytest_sabot.report.terminal import console

        print_demo(console(), report)
    if args.out is not None:
        _record_history(args.out, chosen)
    if not report.ok:
        return EXIT_GATE
    return EXIT_PASS if report.complete else EXIT_INCONCLUSIVE


def _record_history(out: Path, history: str | None) -> None:
    """Each persona's results, kept under ``out``, recorded in the run history (said on
    stderr; a history that cannot be written costs the demo nothing)."""
    from pytest_sabot.commands.history import record_results
    from pytest_sabot.results import RESULTS_FILE, read_results

    for persona in sorted({d.persona for d in DECLARED}):  # a persona that ran nothing has none
        folder = out / persona_dir(persona)
        if (folder / RESULTS_FILE).is_file():
            line = record_results(folder, read_results(folder), history)
            if line:
                print(line, file=sys.stderr)
