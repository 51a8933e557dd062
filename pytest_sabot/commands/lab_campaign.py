"""``sabot lab campaign FILE --out DIR``: every trial of a campaign file, resumable.

Layout of DIR:

    DIR/campaign.json          the campaign as it was started: the file, its scenarios'
                               digests and the plan (a DIR resumes only that campaign)
    DIR/<trial id>/run.json    one trial, written as ``sabot lab run`` writes a run
    DIR/summary.json           the summary (:class:`~pytest_sabot.lab.campaign.CampaignSummary`)

A trial is done when its directory holds a readable run.json of the planned scenario and
agent that did not end ``cancelled``. The same command on the same DIR runs only the trials
that are not done, so a campaign killed at any point (kill -9 included) loses no trial and
runs none twice: a record is written atomically, and a trial without one never finished.
A trial that is run again (its run was interrupted, or its record was damaged) keeps the
earlier files: run.json is set aside as run.prev-N.json and logs take the next number.
One process at a time writes a DIR (``campaign.lock``).

Exit code (the gate's own precedence over every trial): 2 when any trial is an error or
the input is bad, else 1 when any trial failed, else 3 when any is inconclusive or the
campaign is incomplete, else 0.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from pytest_sabot.commands.failure import fail
from pytest_sabot.commands.lab import _emit, _guard, _written
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.exit_codes import EXIT_INCONCLUSIVE
from pytest_sabot.core.trace_io import write_json_atomic
from pytest_sabot.lab.campaign import (
    CampaignSummary,
    Trial,
    TrialResult,
    agent_kind,
    summarize,
)
from pytest_sabot.lab.campaign_load import LoadedCampaign, load_campaign, seeded
from pytest_sabot.lab.controllers import resolve_agent
from pytest_sabot.lab.engine import run_scenario
from pytest_sabot.lab.record import LabRun, read_run
from pytest_sabot.lab.scenario import Scenario
from pytest_sabot.lab.scenario_load import scenario_digest
from pytest_sabot.lab.trusted import DEFAULT_TIMEOUT_S, TRUST_FLAG, TrustedLabAgent
from pytest_sabot.lab.vocabulary import RUN_FILE
from pytest_sabot.report.lab_campaign import print_campaign
from pytest_sabot.report.terminal import console

PLAN_FILE = "campaign.json"
SUMMARY_FILE = "summary.json"
LOCK_FILE = "campaign.lock"

TrialRunner = Callable[[Trial, Scenario, Path, Path], LabRun]
"""Runs one trial: (trial, its seeded scenario, the scenario's file, the trial's directory)
-> the record it wrote."""


def check_agents(loaded: LoadedCampaign, *, trust_local_agent: bool,
                 live_problem: Callable[[str], str | None]) -> None:
    """Refuse, before any trial runs, an agent the options do not allow."""
    for i, spec in enumerate(loaded.file.agents):
        kind = agent_kind(spec)
        if kind == "trusted" and not trust_local_agent:
            raise SabotDataError(loaded.path, f"agents.{i}", f"a built-in controller; "
                                 f"'package.module:callable' is your own code and runs only "
                                 f"with {TRUST_FLAG} (supervised, not a sandbox)", spec)
        if kind == "live":
            problem = live_problem(spec)
            if problem is not None:
                raise SabotDataError(loaded.path, f"agents.{i}", problem, spec)


def preflight_trusted(loaded: LoadedCampaign, timeout_s: float,
                      agent_env: Sequence[str]) -> None:
    """Import each trusted agent once in a child of its own (its log in a scratch folder),
    so a target that does not load is bad input before any trial runs."""
    import tempfile

    for i, spec in enumerate(loaded.file.agents):
        if agent_kind(spec) != "trusted":
            continue
        with tempfile.TemporaryDirectory(prefix="sabot-campaign-") as scratch:
            try:
                with TrustedLabAgent(spec, log_dir=Path(scratch), timeout_s=timeout_s,
                                     pass_env=tuple(agent_env)):
                    pass
            except SabotDataError as exc:
                why = re.sub(r" \(traceback in [^)]*\)", "", exc.expected)
                raise SabotDataError(loaded.path, f"agents.{i}", f"{why}; it is imported "
                                     "from the working directory and PYTHONPATH", spec) \
                    from None


@contextmanager
def _one_writer(out: Path) -> Iterator[None]:
    lock = FileLock(str(out / LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise SabotDataError(out, "", "a campaign directory no other process is writing "
                             f"(another campaign holds {out / LOCK_FILE})") from None
    try:
        yield
    finally:
        lock.release()


def _plan_record(loaded: LoadedCampaign) -> dict[str, Any]:
    return {
        "format_version": 1,
        "campaign": loaded.file.model_dump(mode="json"),
        "file": str(loaded.path),
        "digest": loaded.digest,
        "scenarios": [{"entry": entry, "path": str(path), "name": s.name,
                       "digest": scenario_digest(s)}
                      for entry, (path, s) in zip(loaded.file.scenarios, loaded.scenarios,
                                                  strict=True)],
        "trials": [t.model_dump(mode="json") for t in loaded.trials],
    }


def pin_plan(out: Path, loaded: LoadedCampaign) -> bool:
    """Write DIR/campaign.json, or check that the one there is this campaign's. True when
    the directory already held it (a resumed campaign)."""
    path = out / PLAN_FILE
    if not path.exists():
        write_json_atomic(path, _plan_record(loaded))
        return False
    try:
        pinned = json.loads(path.read_text(encoding="utf-8")).get("digest")
    except (OSError, ValueError, AttributeError):
        raise SabotDataError(path, "", "the campaign record this directory was started "
                             "with (unreadable; use another --out)") from None
    if pinned != loaded.digest:
        raise SabotDataError(path, "digest", f"the digest of {loaded.path} and its "
                             f"scenarios ({loaded.digest[:12]}); this directory holds another "
                             "campaign's trials (use another --out, or the file it started "
                             "with)", str(pinned)[:12])
    return True


def finished(trial_dir: Path, scenario: Scenario, agent: str) -> LabRun | None:
    """The trial's record when the trial is done (see the module's docstring)."""
    path = trial_dir / RUN_FILE
    if not path.is_file():
        return None
    try:
        record = read_run(path)
    except SabotDataError:
        return None  # damaged: run again, the damaged file is set aside
    if record.scenario_digest != scenario_digest(scenario) or record.agent.name != agent:
        return None
    if record.execution.status == "cancelled":
        return None
    return record


def trial_result(out: Path, trial: Trial, record: LabRun | None) -> TrialResult:
    base = {"trial_id": trial.trial_id, "scenario": trial.scenario_name,
            "agent": trial.agent, "seed": trial.seed, "repetition": trial.repetition}
    if record is None:
        return TrialResult(**base, outcome="not_run")
    gate = record.gate
    return TrialResult(**base, outcome=gate.outcome, exit_code=gate.exit_code,
                       execution=record.execution.status,
                       rules=[v.rule for v in gate.violations],
                       run=f"{trial.trial_id}/{RUN_FILE}", run_id=record.run_id)


def builtin_runner() -> TrialRunner:
    def run(trial: Trial, scenario: Scenario, source: Path, trial_dir: Path) -> LabRun:
        return run_scenario(scenario, resolve_agent(trial.agent), trial_dir,
                            source=str(source))

    return run


def trusted_runner(timeout_s: float, agent_env: Sequence[str]) -> TrialRunner:
    hardened = False

    def run(trial: Trial, scenario: Scenario, source: Path, trial_dir: Path) -> LabRun:
        nonlocal hardened
        if not hardened:
            from pytest_sabot.trusted.harden import harden

            harden()  # the agent must not find the run's files through /proc/<this pid>
            hardened = True
        with TrustedLabAgent(trial.agent, log_dir=trial_dir, timeout_s=timeout_s,
                             pass_env=tuple(agent_env)) as trusted:
            return run_scenario(scenario, trusted.agent, trial_dir, source=str(source))

    return run


def _quietly_recorded(trial_dir: Path, record: LabRun) -> None:
    """A trial done before this process started is added to the history if it is not
    there yet (a kill between its record and the history); unchanged entries say nothing."""
    from pytest_sabot.commands.history import record_results

    try:
        line = record_results(trial_dir, record)
    except Exception as exc:
        line = f"history: {trial_dir} not recorded ({type(exc).__name__}: {exc})"
    if line and " unchanged " not in line:
        print(line, file=sys.stderr)


def run_campaign(loaded: LoadedCampaign, out: Path, runners: dict[str, TrialRunner], *,
                 history: bool, progress: Callable[[str], None]) -> CampaignSummary:
    """Every trial not done yet, in plan order; the summary of all of them. An interrupt
    stops after the trial it hit (whose record says ``cancelled``) and is raised again
    once the summary is written."""
    out.mkdir(parents=True, exist_ok=True)
    interrupt: KeyboardInterrupt | None = None
    with _one_writer(out):
        resumed = pin_plan(out, loaded)
        results: list[TrialResult] = []
        for trial in loaded.trials:
            source, base = loaded.scenario_of(trial)
            scenario = seeded(base, trial.seed)
            trial_dir = out / trial.trial_id
            record = finished(trial_dir, scenario, trial.agent)
            if record is not None:
                if resumed and history:
                    _quietly_recorded(trial_dir, record)
            elif interrupt is None:
                runner = runners[agent_kind(trial.agent) or ""]
                try:
                    record = runner(trial, scenario, source, trial_dir)
                except KeyboardInterrupt as exc:
                    interrupt = exc
                    record = None
                else:
                    progress(f"{trial.trial_id}: {record.gate.outcome}")
                    _written(trial_dir, record, history)
            results.append(trial_result(out, trial, record))
        summary = summarize(loaded.file, loaded.digest, results)
        write_summary(out, summary)
    if interrupt is not None:
        raise interrupt
    return summary


def write_summary(out: Path, summary: CampaignSummary) -> Path:
    """DIR/summary.json; an earlier summary that differs is set aside (summary.prev-N.json),
    never overwritten."""
    path = out / SUMMARY_FILE
    payload = summary.model_dump(mode="json")
    if path.exists():
        try:
            same = json.loads(path.read_text(encoding="utf-8")) == payload
        except (OSError, ValueError):
            same = False
        if same:
            return path
        n = 1
        while (aside := path.with_name(f"summary.prev-{n}.json")).exists():
            n += 1
        path.rename(aside)
    write_json_atomic(path, payload)
    return path


def cmd_campaign(file: Path, out: Path, *, trust_local_agent: bool = False,
                 agent_timeout_s: float = DEFAULT_TIMEOUT_S, agent_env: Sequence[str] = (),
                 live: Any = None, as_json: bool = False, history: bool = False) -> int:
    """``lab campaign FILE --out DIR``: run (or resume) a campaign; its exit code.

    ``live`` is the live model's settings (``lab_live.LiveSettings``) when the campaign
    names an ``openai:MODEL`` agent; without them such an agent is refused.
    """
    def body() -> int:
        loaded = load_campaign(file)
        from pytest_sabot.commands.lab_live import live_problem, live_runner

        check_agents(loaded, trust_local_agent=trust_local_agent,
                     live_problem=lambda spec: live_problem(spec, live))
        if trust_local_agent:
            preflight_trusted(loaded, agent_timeout_s, agent_env)
        runners = {"builtin": builtin_runner(),
                   "trusted": trusted_runner(agent_timeout_s, agent_env),
                   "live": live_runner(live)}
        try:
            summary = run_campaign(loaded, out, runners, history=history,
                                   progress=lambda line: print(line, file=sys.stderr))
        except KeyboardInterrupt:
            summary = CampaignSummary.model_validate_json(
                (out / SUMMARY_FILE).read_text(encoding="utf-8"))
            _show(summary, out, as_json)
            return fail("sabot lab", "interrupted; the same command resumes the campaign",
                        EXIT_INCONCLUSIVE)
        _show(summary, out, as_json)
        return summary.exit_code

    return _guard(body)


def _show(summary: CampaignSummary, out: Path, as_json: bool) -> None:
    if as_json:
        _emit(True, summary, "")
        return
    print_campaign(console(), summary, str(out / SUMMARY_FILE))


__all__ = [
    "PLAN_FILE",
    "SUMMARY_FILE",
    "builtin_runner",
    "check_agents",
    "cmd_campaign",
    "finished",
    "pin_plan",
    "preflight_trusted",
    "run_campaign",
    "trial_result",
    "trusted_runner",
    "write_summary",
]
