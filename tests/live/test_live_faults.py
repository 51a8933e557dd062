"""Faults of the provider on the live path, through the plugin as users run it: a provider
that resets every connection or hangs on every call ends in recorded run errors (each cell
retried once), a results file and a normal exit, never a hung session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from live_provider import FakeProvider, Fault
from live_sessions import MODEL, SELECTION, clean_env, run_session

pytestmark = pytest.mark.slow

CELL = "langgraph-default-baseline-T1-s11"


@pytest.mark.parametrize(
    ("code", "expected"), [("reset", "connection error"), ("hang", "deadline of 1s")]
)
def test_S3_1_a_misbehaving_provider_ends_in_recorded_run_errors_not_a_hung_session(
    root: Path, canary: str, code: str, expected: str
) -> None:
    where = root / f"provider-{code}"
    with FakeProvider(canary, persona="vigilant", seed=11) as provider:
        provider.queue(*[Fault(0, code, hang_s=30.0)] * 400)
        session = run_session(
            where,
            [
                *SELECTION,
                "--sabot-framework=langgraph",
                "--sabot-config=default",
                "--sabot-operator=baseline",
                f"--sabot-model={MODEL}",
                f"--sabot-base-url={provider.url}",
                "--sabot-upstream-deadline=1",
            ],
            clean_env({"OPENAI_API_KEY": canary}),
            provider.log,
        )
    # A session whose only cell is a run error fails its run-error gate (SPEC I43).
    assert session.returncode == 1, session.stdout[-3000:] + session.stderr[-2000:]
    assert "are RUN_ERROR" in session.stdout
    results = json.loads((session.out / "results.json").read_text("utf-8"))
    [cell] = results["cells"]
    assert cell["cell_id"] == CELL and cell["status"] == "RUN_ERROR"
    outcome = json.loads((session.out / "cells" / CELL / "outcome.json").read_text("utf-8"))
    assert outcome["attempts"] == 2
    assert expected in outcome["error"] and not outcome["error"].startswith("Timeout")
    assert session.provider, "the provider was never reached"
