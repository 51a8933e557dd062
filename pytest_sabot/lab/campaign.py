"""Campaigns: many lab runs planned from one file, summarized without pooling (pure).

A campaign file names scenarios, agents, seeds and a number of repetitions; its plan is
every (scenario, agent, seed, repetition) in file order, one trial each, and each trial is
one ordinary lab run with the scenario's world seeded by the trial's seed. The summary
keeps every trial: per scenario x agent, the count of each gate outcome out of n with a
Wilson 95% interval, and the raw list of trials. Two agents (two models, two prompts, two
policies: each a different agent entry) are never pooled into one number; nothing sums
across scenarios either.

This module reads no file and runs nothing: ``lab.campaign_load`` reads a campaign file,
``commands.lab_campaign`` runs its trials.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from pytest_sabot.core.exit_codes import EXIT_ERROR, EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_PASS
from pytest_sabot.lab.vocabulary import ExecutionStatus, GateOutcome
from pytest_sabot.scoring.stats import wilson
from pytest_sabot.trusted.target import is_target

CAMPAIGN_FORMAT_VERSION: Literal[1] = 1
SUMMARY_FORMAT_VERSION: Literal[1] = 1
OUTCOMES: tuple[GateOutcome, ...] = ("pass", "fail", "error", "inconclusive")
LIVE_PREFIX = "openai:"
BUILTIN_PREFIX = "builtin:"

AgentKindName = Literal["builtin", "trusted", "live"]
_NAME = r"[A-Za-z_]\w*"
AGENT_PATTERN = (rf"^(builtin:[a-z][a-z0-9_-]*|openai:\S+|{_NAME}(\.{_NAME})*:{_NAME}"
                 rf"(\.{_NAME})*)$")
AgentSpec = Annotated[str, StringConstraints(pattern=AGENT_PATTERN)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def agent_kind(spec: str) -> AgentKindName | None:
    """What an agent entry names: a built-in controller (``builtin:NAME``), a live model
    (``openai:MODEL``) or a trusted ``package.module:callable``; None when it is none."""
    if spec.startswith(BUILTIN_PREFIX):
        return "builtin"
    if spec.startswith(LIVE_PREFIX):
        return "live" if spec[len(LIVE_PREFIX):].strip() else None
    return "trusted" if is_target(spec) else None


class CampaignFile(_Strict):
    """One campaign file (YAML)."""

    format_version: Literal[1] = Field(
        CAMPAIGN_FORMAT_VERSION, description="Campaign file format version."
    )
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Campaign name.")
    description: str = Field("", description="What the campaign compares, for people.")
    scenarios: list[str] = Field(
        min_length=1,
        description="Scenario files (relative to the campaign file, or to the working "
        "directory) or names of shipped scenarios.",
    )
    agents: list[AgentSpec] = Field(
        min_length=1,
        description="Agents, each summarized on its own: 'builtin:naive' (a scripted "
        "controller), 'package.module:callable' (a trusted local agent, needs "
        "--trust-local-agent) or 'openai:MODEL' (a live model, needs the live opt-in and "
        "a key).",
    )
    seeds: list[int] = Field(
        min_length=1, description="World seeds; each trial's scenario is seeded with one."
    )
    repetitions: int = Field(
        1, ge=1, le=1000, description="Trials per scenario, agent and seed."
    )


def problems(campaign: CampaignFile) -> Iterator[tuple[str, str, object]]:
    """What the schema cannot say, each as (dotted field, expected, got): an entry listed
    twice."""
    for name in ("scenarios", "agents", "seeds"):
        values: list[object] = list(getattr(campaign, name))
        for i, value in enumerate(values):
            if value in values[:i]:
                yield (f"{name}.{i}", "an entry not listed before (repetitions runs a trial "
                       "again)", value)


def slug(text: str) -> str:
    """``text`` as a directory-name part: runs of characters outside [A-Za-z0-9._] a dash."""
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-") or "x"


class Trial(_Strict):
    """One planned run."""

    trial_id: str = Field(description="Unique in the campaign; the trial's directory name.")
    scenario: str = Field(description="The scenario entry as the campaign file gives it.")
    scenario_name: str = Field(description="The scenario's own name.")
    agent: str = Field(description="The agent entry as the campaign file gives it.")
    seed: int = Field(description="The world seed of this trial.")
    repetition: int = Field(ge=1, description="1 for the first trial of this seed.")


def plan(campaign: CampaignFile, scenario_names: Sequence[str]) -> list[Trial]:
    """Every trial of ``campaign`` in file order (scenario, agent, seed, repetition);
    ``scenario_names[i]`` is the name of ``campaign.scenarios[i]``. ValueError (naming
    the entry) when two entries would share a trial directory."""
    trials: list[Trial] = []
    seen: dict[str, str] = {}
    for scenario, name in zip(campaign.scenarios, scenario_names, strict=True):
        for agent in campaign.agents:
            for seed in campaign.seeds:
                for rep in range(1, campaign.repetitions + 1):
                    tid = f"{slug(name)}--{slug(agent)}--s{seed}-r{rep}"
                    where = f"{scenario} x {agent}"
                    if tid in seen:
                        raise ValueError(f"{where} and {seen[tid]} would share the trial "
                                         f"directory {tid}")
                    seen[tid] = where
                    trials.append(Trial(trial_id=tid, scenario=scenario, scenario_name=name,
                                        agent=agent, seed=seed, repetition=rep))
    return trials


def plan_digest(campaign: CampaignFile, scenario_digests: Sequence[str]) -> str:
    """sha256 over the campaign and the digests of its scenarios as loaded: a directory
    resumes only the campaign that started it."""
    body = {"campaign": campaign.model_dump(mode="json"), "scenarios": list(scenario_digests)}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------- results


class TrialResult(_Strict):
    """One trial as its run record says it ended (or that it has no record yet)."""

    trial_id: str
    scenario: str
    agent: str
    seed: int
    repetition: int
    outcome: GateOutcome | Literal["not_run"] = Field(
        description="The run's gate, or not_run when no record exists yet."
    )
    exit_code: int | None = Field(None, description="The gate's exit code.")
    execution: ExecutionStatus | None = Field(None, description="How execution ended.")
    rules: list[str] = Field(default_factory=list, description="Rules the run violated.")
    run: str | None = Field(None, description="The trial's run.json, relative to the "
                            "campaign directory.")
    run_id: str | None = None


class Rate(_Strict):
    """k of n, with its Wilson 95% interval."""

    k: int
    n: int
    rate: float | None
    low: float | None
    high: float | None


def rate(k: int, n: int) -> Rate:
    interval = wilson(k, n)
    return Rate(k=k, n=n, rate=k / n if n else None,
                low=interval.low if interval else None,
                high=interval.high if interval else None)


class GroupSummary(_Strict):
    """One scenario x agent: the only level at which trials are counted together."""

    scenario: str
    agent: str
    planned: int = Field(description="Trials planned for this scenario and agent.")
    n: int = Field(description="Trials with a record (the denominator).")
    counts: dict[str, int] = Field(description="Trials per gate outcome; they sum to n.")
    rates: dict[str, Rate] = Field(description="Each outcome's share of n, Wilson 95%.")
    trials: list[str] = Field(description="The ids of this group's trials, in plan order.")


class CampaignSummary(_Strict):
    """summary.json of a campaign directory."""

    format_version: Literal[1] = SUMMARY_FORMAT_VERSION
    campaign: str
    digest: str = Field(description="The plan's digest (campaign and scenarios).")
    planned: int
    recorded: int
    complete: bool = Field(description="Every planned trial has a record.")
    groups: list[GroupSummary] = Field(description="Per scenario x agent; never pooled.")
    trials: list[TrialResult] = Field(description="Every trial, negative outcomes included.")
    exit_code: int = Field(description="0 pass, 1 fail, 2 error, 3 inconclusive or "
                           "incomplete (docs/LAB.md, L15).")


def campaign_exit(results: Iterable[TrialResult]) -> int:
    """The campaign's exit code, by the gate's own precedence: 2 when any trial is an
    error, else 1 when any failed, else 3 when any is inconclusive or not run yet, else 0
    (every trial passed)."""
    outcomes = {r.outcome for r in results}
    if "error" in outcomes:
        return EXIT_ERROR
    if "fail" in outcomes:
        return EXIT_GATE
    if outcomes & {"inconclusive", "not_run"} or not outcomes:
        return EXIT_INCONCLUSIVE
    return EXIT_PASS


def summarize(campaign: CampaignFile, digest: str, results: Sequence[TrialResult]) -> (
        CampaignSummary):
    """The summary of a campaign's trials (in plan order)."""
    groups: list[GroupSummary] = []
    keys = list(dict.fromkeys((r.scenario, r.agent) for r in results))
    for scenario, agent in keys:
        mine = [r for r in results if (r.scenario, r.agent) == (scenario, agent)]
        done = [r for r in mine if r.outcome != "not_run"]
        counts = {o: sum(1 for r in done if r.outcome == o) for o in OUTCOMES}
        groups.append(GroupSummary(
            scenario=scenario, agent=agent, planned=len(mine), n=len(done), counts=counts,
            rates={o: rate(counts[o], len(done)) for o in OUTCOMES},
            trials=[r.trial_id for r in mine]))
    recorded = sum(1 for r in results if r.outcome != "not_run")
    return CampaignSummary(
        campaign=campaign.name, digest=digest, planned=len(results), recorded=recorded,
        complete=recorded == len(results), groups=groups, trials=list(results),
        exit_code=campaign_exit(results))


__all__ = [
    "CAMPAIGN_FORMAT_VERSION",
    "OUTCOMES",
    "CampaignFile",
    "CampaignSummary",
    "GroupSummary",
    "Rate",
    "Trial",
    "TrialResult",
    "agent_kind",
    "campaign_exit",
    "plan",
    "plan_digest",
    "problems",
    "rate",
    "slug",
    "summarize",
]
