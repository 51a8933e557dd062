"""Every framework is handed its HTTP clients by the run context (issue 11): a run builds
no SSL context of its own (loading the CA bundle costs 0.1-0.2 s per client) and httpx is
left as it ships, with no factory of it patched."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx import _config
from httpx._transports import default as transports

from pytest_sabot.core.frameworks import adapter
from pytest_sabot.gateway import GatewaySettings, start_gateway
from pytest_sabot.gateway.loopback import async_client, shared_ssl_context, sync_client
from pytest_sabot.harness.run import RunSettings, run_cell
from pytest_sabot.matrix.standard import load_standard


def _context(client: httpx.Client | httpx.AsyncClient) -> object:
    return client._transport._pool._ssl_context  # type: ignore[union-attr]


def test_loopback_clients_share_one_ssl_context_and_no_proxy() -> None:
    first, again = async_client(), async_client()
    assert first is not again  # one per event loop
    assert _context(first) is _context(again) is _context(sync_client()) is shared_ssl_context()
    assert sync_client() is sync_client()
    assert not sync_client().trust_env and not first.trust_env


@pytest.fixture
def count_ca_loads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every CA bundle loaded into an SSL context while the test runs."""
    loads: list[Any] = []
    original = ssl.SSLContext.load_verify_locations

    def counting(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(args or kwargs)
        original(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting)
    yield loads


@pytest.mark.slow
@pytest.mark.parametrize(
    ("wave", "framework"),
    [(2, "langgraph"), (2, "crewai"), (2, "autogen"), ("agent-framework", "agent_framework")],
)
def test_a_run_loads_no_ca_bundle_and_httpx_stays_unpatched(
    tmp_path: Path, wave: int | str, framework: str, request: pytest.FixtureRequest
) -> None:
    if adapter(framework).missing():
        pytest.skip(adapter(framework).missing() or "")
    std = load_standard(wave)
    with start_gateway(GatewaySettings()) as gateway:

        def run(config: str, out: str) -> None:
            settings = RunSettings(
                root=std.root, out_dir=tmp_path / out, gateway_url=str(gateway.url),
                model="sim:vigilant",
            )
            outcome = run_cell(std.cell(f"{framework}-{config}-baseline-T1-s11"), std.wave,
                               settings)
            assert outcome.error is None, outcome.error

        run("default", "warm")  # imports, the process's shared clients
        loads = request.getfixturevalue("count_ca_loads")
        for config in ("default", "guardrail"):
            run(config, f"second-{config}")
        assert loads == []
    assert transports.create_ssl_context is _config.create_ssl_context
