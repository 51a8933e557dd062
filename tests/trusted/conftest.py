"""The trusted-agent tests run from their own directory, where the user's package lives."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The directory the command runs in (the child imports the user's package from it)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # the same package, imported in process
    return tmp_path
