"""Fixtures of the inspector's tests: recorded runs (two keyless slices and a lab run) made
once per session, and one server per module over its own copy of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from web_helpers import Server, own_root, recorded_root


@pytest.fixture(scope="session")
def recorded(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if hasattr(pytestconfig, "workerinput") else base) / "sabot-web"
    return recorded_root(shared)


@pytest.fixture(scope="module")
def served(recorded: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server per module, over the module's own copy of the recorded root."""
    base = tmp_path_factory.mktemp("served")
    root = own_root(recorded, base)
    with Server(root, project=base) as server:
        yield server
