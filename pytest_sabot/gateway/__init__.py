"""The model gateway: a local OpenAI-compatible HTTP server every pipeline talks to.

One gateway per pytest session (owned by the controller); workers reach it over HTTP.
Backends: the embedded model (``sim``), a live upstream (``openai:<model>``, opt-in,
budget-capped, recorded) and ``replay:<dir>``. The O4 model swap happens here.
"""

from pytest_sabot.gateway.backends.base import Backend, BackendError, BackendReply, CallContext
from pytest_sabot.gateway.client import GatewayClient, GatewayError
from pytest_sabot.gateway.protocol import Downgrade, ExchangeRecord, GatewayStats
from pytest_sabot.gateway.server import Gateway, start_gateway
from pytest_sabot.gateway.settings import GatewaySettings

__all__ = [
    "Backend",
    "BackendError",
    "BackendReply",
    "CallContext",
    "Downgrade",
    "ExchangeRecord",
    "Gateway",
    "GatewayClient",
    "GatewayError",
    "GatewaySettings",
    "GatewayStats",
    "start_gateway",
]
