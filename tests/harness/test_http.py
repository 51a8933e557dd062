"""Framework HTTP clients in a run process share one SSL context per CA configuration."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from pytest_sabot.gateway.loopback import share_default_ssl_context


def _context(client: httpx.Client) -> object:
    transport = client._transport
    return transport._pool._ssl_context  # type: ignore[attr-defined]


def test_default_clients_share_one_context_after_install() -> None:
    share_default_ssl_context()
    share_default_ssl_context()  # idempotent
    a, b = httpx.Client(), httpx.Client()
    assert _context(a) is _context(b)


def test_non_default_verification_is_left_to_httpx() -> None:
    share_default_ssl_context()
    insecure = httpx.Client(verify=False)
    assert _context(insecure) is not _context(httpx.Client())


def test_a_different_ca_bundle_gets_its_own_context(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import certifi

    share_default_ssl_context()
    first = _context(httpx.Client())
    bundle = tmp_path / "ca.pem"
    bundle.write_text(Path(certifi.where()).read_text())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    assert _context(httpx.Client()) is not first
