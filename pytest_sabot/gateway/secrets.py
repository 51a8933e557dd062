"""Secrets of the gateway: the per-session secret and run keys, and the scrubbing of keys
and secrets from anything the gateway writes, serves or logs.

A value is scrubbed when it equals a known secret (the provider key read from the
environment, the gateway's session secret, any bearer token a client presented, every
secret registered in the process) or matches a key-shaped pattern ('Bearer ...', 'sk-...').

The session secret travels inside the gateway URL (a path segment of every agent's base
URL), and HTTP libraries log request URLs (httpx at INFO). Every process that learns a
session secret (or a credential of its own) therefore registers it with
:func:`redact_in_logs`: every log record of the process carries ``[REDACTED]`` in its place
before any handler sees it, and every file the harness writes is scrubbed of it by its
writer. The registry and the scrubber live in :mod:`pytest_sabot.core.secrets`, below every
writer; this module keeps their names where the gateway's callers have always found them.
"""

from __future__ import annotations

import secrets

from pytest_sabot.core.secrets import (
    REDACTED,
    Scrubber,
    redact_in_logs,
    redact_text,
    scrub_text,
    scrub_value,
)

__all__ = [
    "REDACTED",
    "SECRET_BYTES",
    "Scrubber",
    "new_run_key",
    "new_secret",
    "redact_in_logs",
    "redact_text",
    "scrub_text",
    "scrub_value",
]

SECRET_BYTES = 32  # 256 bits, url-safe base64: 43 characters


def new_secret() -> str:
    """A fresh, unguessable session secret (url-safe: usable as a path segment)."""
    return secrets.token_urlsafe(SECRET_BYTES)


def new_run_key() -> str:
    """A fresh, unguessable run key (192 bits)."""
    return secrets.token_urlsafe(24)
