"""Fixtures for the lab tests (helpers live in lab_helpers.py)."""

from __future__ import annotations

import pytest
from lab_helpers import scenario

from pytest_sabot.lab.scenario import Scenario


@pytest.fixture
def lost_create() -> Scenario:
    return scenario("lost-create-response")
