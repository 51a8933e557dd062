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
        from pytest_sabot.gateway.client import split_gateway_url

        try:
            split_gateway_url(settings.gateway_url)
        except ValueError as exc:
            raise pytest.UsageError(f"pytest-sabot: --sabot-gateway-url: {exc}") from None
        return None, settings.gateway_url
    from pytest_sabot.core.errors import SabotDataError
    from pytest_sabot.gateway import GatewaySettings, start_gateway

    values = {
        "sabot_model": settings.model,
        "sabot_base_url": settings.base_url,
        "sabot_prices": settings.prices,
        "sabot_budget_usd": settings.budget_usd,
        "sabot_max_connections": settings.max_connections,
        "sabot_spend_ledger": settings.spend_ledger,
        "sabot_upstream_deadline": settings.upstream_deadline,
    }
    try:
        gateway_settings = GatewaySettings.from_options(values, out)
    except (ValueError, SabotDataError) as exc:
        raise pytest.UsageError(f"pytest-sabot: {exc}") from None
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
