"""The live model agent of the lab's commands (``--agent openai:MODEL``): placeholder
refusal until its settings are given."""

from __future__ import annotations

from typing import Any

from pytest_sabot.lab.campaign import Trial
from pytest_sabot.lab.record import LabRun


def live_problem(spec: str, live: Any) -> str | None:
    if live is None:
        return "a live model agent, which needs the live opt-in (--live) and its key"
    return None


def live_runner(live: Any) -> Any:
    def run(trial: Trial, *args: Any) -> LabRun:
        raise RuntimeError(f"{trial.agent}: no live settings")

    return run
