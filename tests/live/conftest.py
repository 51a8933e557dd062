"""Fixtures of the live-path tests: a loopback provider answered by the embedded model, and
the plugin sessions that run real frameworks against it (once per test session)."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock
from live_provider import FakeProvider
from live_sessions import (
    SELECTION,
    TINY_BUDGET_USD,
    Session,
    clean_env,
    live_run,
    run_session,
    shared_secret,
)

from pytest_sabot.matrix.standard import Standard, load_standard

ALL_FRAMEWORKS = "--sabot-framework=langgraph,crewai,autogen"
LIVE_OPERATORS = "--sabot-operator=baseline,O1,O4"
# The O4 target is named on the command line for the main session; the wave's own default
# is checked on its own (test_O4_live_downgrade_defaults_to_the_wave_downgrade_model).
DOWNGRADE = "--sabot-downgrade-model=gpt-5.6-luna"
BUDGET_SLICE = ["--sabot-framework=langgraph", "--sabot-operator=baseline,O1"]


def live_root(config: pytest.Config, factory: pytest.TempPathFactory) -> Path:
    """A directory every xdist worker of this test session sees."""
    base = factory.getbasetemp()
    root = (base.parent if hasattr(config, "workerinput") else base) / "sabot-live"
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture(scope="session")
def wave1() -> Standard:
    return load_standard(1)


@pytest.fixture(scope="session")
def root(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return live_root(pytestconfig, tmp_path_factory)


@pytest.fixture(scope="session")
def canary(root: Path) -> str:
    return shared_secret(root)


@pytest.fixture(scope="session")
def live_session(root: Path, canary: str) -> Session:
    """Three frameworks x two configs x (baseline, O1, O4) of T1 seed 11, live."""
    return live_run(root / "live", canary, [ALL_FRAMEWORKS, LIVE_OPERATORS, DOWNGRADE])


@pytest.fixture(scope="session")
def replay_session(root: Path, live_session: Session) -> Session:
    """The same selection replayed from the live session's recordings, no provider, no key."""
    spec = f"--sabot-model=replay:{live_session.out / 'recordings'}"
    return run_session(
        root / "replay", [*SELECTION, spec, ALL_FRAMEWORKS, LIVE_OPERATORS], clean_env()
    )


@pytest.fixture(scope="session")
def budget_sessions(root: Path, canary: str) -> tuple[Session, Session, Session]:
    """A live slice under a tiny cap, a --sabot-resume of it under the same cap, then one
    under a larger cap; all three charge the same project ledger (the parent of ``out``)."""
    out = root / "budget-out"
    tiny = live_run(
        root / "budget-tiny", canary, [*BUDGET_SLICE, f"--sabot-budget-usd={TINY_BUDGET_USD}"], out
    )
    tiny = _snapshot(tiny, out)
    same_cap = live_run(
        root / "budget-same-cap",
        canary,
        [*BUDGET_SLICE, f"--sabot-budget-usd={TINY_BUDGET_USD}", "--sabot-resume"],
        out,
    )
    same_cap = _snapshot(same_cap, out)
    resumed = live_run(
        root / "budget-resume",
        canary,
        [*BUDGET_SLICE, "--sabot-budget-usd=25", "--sabot-resume"],
        out,
    )
    return tiny, same_cap, resumed


def _snapshot(session: Session, out: Path) -> Session:
    """The session with ``out`` as it left it (a later resume changes the directory)."""
    snapshot = session.where / "out-before-resume"
    with FileLock(session.where / "snapshot.lock"):
        if not snapshot.exists():
            shutil.copytree(out, snapshot)
    return dataclasses.replace(session, out=snapshot)


@pytest.fixture
def provider(canary: str) -> Iterator[FakeProvider]:
    with FakeProvider(canary, persona="vigilant", seed=11) as served:
        yield served
