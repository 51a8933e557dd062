"""Development conveniences for this repository (an installed pytest-sabot registers itself
through its pytest11 entry point and needs no conftest)."""

from __future__ import annotations

import pytest


def pytest_report_header(config: pytest.Config) -> str:
    from pytest_sabot.core.paths import standard_root

    return f"sabot standard root: {standard_root()}"
