"""Model backends behind the gateway: embedded model, live upstream, replay."""

from pytest_sabot.gateway.backends.base import (
    Backend,
    BackendError,
    BackendReply,
    CallContext,
)

__all__ = ["Backend", "BackendError", "BackendReply", "CallContext"]
