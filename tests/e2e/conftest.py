"""Fixtures of the acceptance tests: the loaded wave, one loopback gateway per process
and the bank of real cells shared by every test (and every xdist worker) of a session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_bank import CellBank, RequestLog

from pytest_sabot.gateway import GatewaySettings, start_gateway
from pytest_sabot.matrix.standard import Standard, load_standard


def shared_dir(config: pytest.Config, factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory every xdist worker of this session sees (the session's own base temp
    directory when xdist is off)."""
    base = factory.getbasetemp()
    root = base.parent if hasattr(config, "workerinput") else base
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def wave1() -> Standard:
    return load_standard(1)


@pytest.fixture(scope="session")
def request_log() -> RequestLog:
    return RequestLog()


@pytest.fixture(scope="session")
def gateway_url(request_log: RequestLog) -> Iterator[str]:
    gateway = start_gateway(GatewaySettings(), backends={"sim": request_log})
    try:
        yield gateway.url
    finally:
        gateway.close()


@pytest.fixture(scope="session")
def bank(
    wave1: Standard,
    gateway_url: str,
    request_log: RequestLog,
    tmp_path_factory: pytest.TempPathFactory,
    pytestconfig: pytest.Config,
) -> CellBank:
    root = shared_dir(pytestconfig, tmp_path_factory, "sabot-e2e-cells")
    return CellBank(wave1, root, gateway_url, request_log)


@pytest.fixture(scope="session")
def bank3(
    gateway_url: str,
    request_log: RequestLog,
    tmp_path_factory: pytest.TempPathFactory,
    pytestconfig: pytest.Config,
) -> CellBank:
    """Wave-3 cells (redacted task material, SPEC I86), kept apart from wave 1's: a cell id
    names the same cell in both waves."""
    root = shared_dir(pytestconfig, tmp_path_factory, "sabot-e2e-cells-wave3")
    return CellBank(load_standard(3), root, gateway_url, request_log)
