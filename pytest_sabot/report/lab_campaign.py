"""A campaign's summary as people read it in the terminal: one row per scenario x agent
(counts of every gate outcome out of n, the pass rate with its Wilson 95% interval), then
every trial. No row pools two agents or two scenarios."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console

from pytest_sabot.lab.campaign import OUTCOMES, CampaignSummary, GroupSummary, Rate, TrialResult
from pytest_sabot.lab.vocabulary import GateOutcome
from pytest_sabot.report.terminal import Column, print_lines, print_table

FIXTURE_NOTE = ("builtin:* agents are scripted controllers: acceptance fixtures, not "
                "measurements of any model")


def rate_text(rate: Rate) -> str:
    if rate.rate is None or rate.low is None or rate.high is None:
        return "n/a"
    return f"{rate.k}/{rate.n} {rate.rate:.1%} [{rate.low:.1%}, {rate.high:.1%}]"


def group_line(g: GroupSummary) -> str:
    """One scenario x agent in words: every outcome's count out of n, and the pass and
    fail rates with their Wilson 95% intervals (summary.json's group, as a sentence)."""
    n = f"n={g.n}" + (f" of {g.planned} planned" if g.n != g.planned else "")
    counts = ", ".join(f"{o} {g.counts[o]}" for o in OUTCOMES)
    return (f"{g.scenario} x {g.agent}: {n}; {counts}; pass {rate_text(g.rates['pass'])}; "
            f"fail {rate_text(g.rates['fail'])}")


def short_rate(rate: Rate) -> str:
    """A rate and its interval without the counts the table shows beside it."""
    if rate.rate is None or rate.low is None or rate.high is None:
        return "n/a"
    return f"{rate.rate:.1%} [{rate.low:.1%}, {rate.high:.1%}]"


def _count(outcome: GateOutcome) -> Callable[[GroupSummary], str]:
    return lambda g: str(g.counts[outcome])


def group_columns() -> tuple[Column[GroupSummary], ...]:
    """One row per agent of a scenario: n, every outcome's count, the pass rate (and,
    where the width allows, the fail rate) with Wilson 95% intervals."""
    return (
        Column("agent", lambda g: g.agent, 1),
        Column("n", lambda g: str(g.n) if g.n == g.planned else f"{g.n}/{g.planned}", 1,
               "right"),
        *(Column(o if o != "inconclusive" else "inconcl.", _count(o), 1, "right")
          for o in OUTCOMES),
        Column("pass [95% CI]", lambda g: short_rate(g.rates["pass"]), 1),
        Column("fail [95% CI]", lambda g: short_rate(g.rates["fail"]), 2),
    )


def trial_columns() -> tuple[Column[TrialResult], ...]:
    return (
        Column("trial", lambda t: t.trial_id, 1),
        Column("gate", lambda t: t.outcome, 1),
        Column("rules broken", lambda t: ", ".join(t.rules) or "-", 1),
        Column("execution", lambda t: t.execution or "-", 2),
        Column("record", lambda t: t.run or "-", 3),
    )


def print_campaign(out: Console, summary: CampaignSummary, where: str) -> None:
    """The summary table, every trial, and where the records are."""
    state = "complete" if summary.complete else (
        f"INCOMPLETE: {summary.planned - summary.recorded} trial(s) not run yet; the same "
        "command resumes")
    print_lines(out, [f"campaign {summary.campaign}: {summary.recorded} of {summary.planned} "
                      f"trials recorded ({state})",
                      "per scenario x agent (never pooled; rates over n with Wilson 95% "
                      "intervals):"])
    for scenario in dict.fromkeys(g.scenario for g in summary.groups):
        print_lines(out, [f"scenario {scenario}"])
        print_table(out, group_columns(), [g for g in summary.groups if g.scenario == scenario],
                    "summary.json lists every rate")
    if any(g.agent.startswith("builtin:") for g in summary.groups):
        print_lines(out, [FIXTURE_NOTE])
    print_lines(out, [f"trials ({len(summary.trials)}, in plan order):"])
    print_table(out, trial_columns(), summary.trials, "summary.json lists every field")
    print_lines(out, [f"summary: {where}", f"exit {summary.exit_code}"], wrap=False)


__all__ = ["group_columns", "group_line", "print_campaign", "rate_text", "short_rate",
           "trial_columns"]
