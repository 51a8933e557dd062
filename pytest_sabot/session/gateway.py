"""The session's model gateway: started once on the controller, closed by the config's
cleanup (so it is closed however the session ends). Its URL is an opaque string handed
to the workers and the harness."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_sabot.session.settings import Settings


def start(config: pytest.Config, settings: Settings, out: Path) -> tuple[Any, str]:
    """(the running gateway or None, its URL). An already running gateway given with
    --sabot-gateway-url is used as it is."""
    if settings.gateway_url:
        return None, settings.gateway_url
    from pytest_sabot.gateway import GatewaySettings, start_gateway

    live = settings.live
    extra: dict[str, Any] = {}
    if settings.base_url:
        extra["base_url"] = settings.base_url
    gateway_settings = GatewaySettings(
        prices_path=Path(settings.prices) if settings.prices else None,
        allow_live=live,
        budget_usd=settings.budget_usd if live else None,
        max_connections=settings.max_connections,
        record_dir=out / "recordings" if live else None,
        **extra,
    )
    gateway = start_gateway(gateway_settings)
    config.add_cleanup(gateway.close)
    return gateway, str(gateway.url)


def stats(gateway: Any) -> dict[str, Any] | None:
    """The gateway's spend and call counts, JSON-able (None without an own gateway)."""
    if gateway is None:
        return None
    data: dict[str, Any] = gateway.service.stats().model_dump(mode="json")
    return data


def budget_exhausted(gateway: Any) -> bool:
    if gateway is None:
        return False
    return bool(gateway.service.stats().budget.exhausted)


def budget_exhausted_remote(url: str | None) -> bool:
    """Whether the session's gateway has refused a call for budget (asked over HTTP, so
    every worker sees the one cap); False when it cannot be asked."""
    if not url:
        return False
    from pytest_sabot.gateway import GatewayClient

    try:
        return bool(GatewayClient(url).stats().budget.exhausted)
    except Exception:
        return False
