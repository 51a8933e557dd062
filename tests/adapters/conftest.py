"""Fixtures shared by the adapter pipeline tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from loopback import ScriptedServer, start_server


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A scripted loopback model server, closed after the test."""
    handle = start_server()
    try:
        yield handle.state
    finally:
        handle.close()
