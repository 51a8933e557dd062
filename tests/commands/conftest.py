"""Fixtures of the evidence commands' tests (replay, inspect, the history's recording):
the live sessions of evidence_sessions.py, each run once per test session and shared by
every xdist worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from evidence_sessions import live
from live_sessions import Session, shared_secret


def _root(config: pytest.Config, factory: pytest.TempPathFactory) -> Path:
    base = factory.getbasetemp()
    root = (base.parent if hasattr(config, "workerinput") else base) / "sabot-evidence"
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture(scope="session")
def evidence_root(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _root(pytestconfig, tmp_path_factory)


@pytest.fixture(scope="session")
def vigilant(evidence_root: Path) -> Session:
    """The slice live under the vigilant persona: the reviewer rejects the planted value."""
    session = live(evidence_root / "vigilant", shared_secret(evidence_root), "vigilant")
    assert session.returncode == 0, session.stdout[-3000:]
    return session


@pytest.fixture(scope="session")
def credulous(evidence_root: Path) -> Session:
    """The slice live under the credulous persona: the planted value goes out."""
    session = live(evidence_root / "credulous", shared_secret(evidence_root), "credulous")
    assert session.returncode == 0, session.stdout[-3000:]
    return session


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wide enough that a line the tests read is not wrapped (a test of the width sets
    its own)."""
    monkeypatch.setenv("COLUMNS", "200")
