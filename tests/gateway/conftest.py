from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_fakes import CANARY_KEY, FakeUpstream, ScriptedBackend, scripted_respond

from pytest_sabot.gateway import Gateway, GatewayClient, GatewaySettings, start_gateway
from pytest_sabot.gateway.backends.sim import SimBackend

_keys = itertools.count()


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    """A keyless gateway: 'script:<name>' and 'sim:<persona>' served by test-local models."""
    gw = start_gateway(
        GatewaySettings(client_timeout_s=2.0),
        backends={"script": ScriptedBackend(), "sim": SimBackend(respond=scripted_respond)},
    )
    yield gw
    gw.close()


@pytest.fixture
def client(gateway: Gateway) -> GatewayClient:
    return GatewayClient(gateway.url)


@pytest.fixture
def run(client: GatewayClient) -> Callable[..., str]:
    """Register a fresh run and return its key."""

    def _register(
        model: str = "script:terra",
        downgrade: dict[str, Any] | None = None,
        cell_id: str | None = None,
        seed: int = 11,
    ) -> str:
        n = next(_keys)
        cell = cell_id or f"cell{n}"
        key = f"{cell}~a1"
        client.register_run(key, cell, seed, model, downgrade)
        return key

    return _register


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    fake = FakeUpstream()
    yield fake
    fake.close()


@pytest.fixture
def live_gateway(
    upstream: FakeUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Gateway]]:
    """Factory for a gateway whose 'openai:' backend is the loopback fake upstream."""
    monkeypatch.setenv("OPENAI_API_KEY", CANARY_KEY)
    started: list[Gateway] = []

    def _start(**overrides: Any) -> Gateway:
        options: dict[str, Any] = {
            "base_url": upstream.url,
            "allow_live": True,
            "record_dir": tmp_path / "recordings",
            "backoff_base_s": 0.001,
            "backoff_max_s": 0.05,
            "upstream_timeout_s": 5.0,
            "client_timeout_s": 2.0,
        }
        options.update(overrides)
        gw = start_gateway(GatewaySettings(**options))
        started.append(gw)
        return gw

    yield _start
    for gw in started:
        gw.close()
