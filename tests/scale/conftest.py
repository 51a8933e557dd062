"""Fixtures of the scale tests: whole sessions run as users run them (a fresh interpreter
per session), with xdist workers, shards and remote-style gateways."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The loopback stand-in provider of the live-path tests.
LIVE = Path(__file__).resolve().parents[1] / "live"
if str(LIVE) not in sys.path:
    sys.path.insert(0, str(LIVE))


# LangGraph's default row, task T1, seed 11: a baseline and two fault cells, recorded once.
TINY = ["--sabot-wave=1", "--sabot-framework=langgraph", "--sabot-config=default",
        "--sabot-task=T1", "--sabot-seed=11", "--sabot-operator=baseline,O1,O3", "-n", "0"]


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny recorded wave output (three cells), read and never changed by its users."""
    from scale_runs import run

    done = run(tmp_path_factory.mktemp("tiny-source"), *TINY, "--sabot-history=none")
    assert done.returncode == 0, done.describe()
    assert len(done.results.cells) == 3
    return done.out
