"""Fixtures of the history's tests: the real inputs of history_inputs.py, once per session."""

from __future__ import annotations

import pytest
from history_inputs import Inputs, make_inputs


@pytest.fixture(scope="session")
def inputs(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    return make_inputs(pytestconfig, tmp_path_factory)
