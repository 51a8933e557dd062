"""Hooks pytest-sabot adds for other plugins to implement (registered in
``pytest_addhooks``; pytest-benchmark lets users extend its JSON the same way).

Implement one in a plugin or a conftest.py::

    def pytest_sabot_results_json(config, results):
        results["extensions"]["my-dashboard"] = {"team": "agents", "build": "1234"}
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec
def pytest_sabot_results_json(config: pytest.Config, results: dict[str, Any]) -> None:
    """Extend results.json before it is written: add JSON-able fields under
    ``results["extensions"][<your plugin's name>]`` (every other key is read-only)."""
