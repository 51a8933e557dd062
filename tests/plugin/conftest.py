"""Fixtures of the plugin tests: a loopback gateway of the embedded model for the tests
that run cells directly (``run_cell``) rather than through a pytest session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_sabot.gateway import GatewaySettings, start_gateway


@pytest.fixture(scope="session")
def gateway_url() -> Iterator[str]:
    gateway = start_gateway(GatewaySettings())
    try:
        yield gateway.url
    finally:
        gateway.close()
