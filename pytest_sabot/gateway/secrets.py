"""Secrets of the gateway: the per-session secret, and the scrubbing of keys and secrets
from anything the gateway writes, serves or logs.

A value is scrubbed when it equals a known secret (the provider key read from the
environment, the gateway's session secret, any bearer token a client presented) or matches
a key-shaped pattern ('Bearer ...', 'sk-...').

The session secret travels inside the gateway URL (a path segment of every agent's base
URL), and HTTP libraries log request URLs (httpx at INFO). Every process that learns a
session secret therefore registers it with :func:`redact_in_logs`, which makes every log
record of the process carry ``[REDACTED]`` in its place before any handler sees it.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import threading
import traceback
from typing import Any

REDACTED = "[REDACTED]"

_PATTERNS = (
    re.compile(r"Bearer\s+[A-Za-z0-9._~+/=\-]+", re.IGNORECASE),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"),
)
_MIN_KNOWN_LEN = 6
_MIN_LEARNED_LEN = 16


class Scrubber:
    """Replaces known secrets and key-shaped strings; thread-safe, grows as keys are seen."""

    def __init__(self, known: list[str] | None = None) -> None:
        self._lock = threading.Lock()
        self._known: set[str] = set()
        for value in known or []:
            self.add(value)

    def add(self, secret: str | None) -> None:
        """Remember one more secret (too-short values are ignored: they would over-match)."""
        if secret and len(secret.strip()) >= _MIN_KNOWN_LEN:
            with self._lock:
                self._known.add(secret.strip())

    def learn(self, token: str | None) -> None:
        """Remember a bearer token a client presented, if it is long enough to be a key
        (short placeholder tokens would scrub ordinary words out of model traffic)."""
        if token and len(token.strip()) >= _MIN_LEARNED_LEN:
            self.add(token)

    def text(self, value: str) -> str:
        with self._lock:
            known = sorted(self._known, key=len, reverse=True)
        for secret in known:
            if secret in value:
                value = value.replace(secret, REDACTED)
        for pattern in _PATTERNS:
            value = pattern.sub(REDACTED, value)
        return value

    def _has_secret(self, text: str) -> bool:
        with self._lock:
            known = list(self._known)
        return any(secret in text for secret in known) or any(
            pattern.search(text) for pattern in _PATTERNS
        )

    def value(self, value: Any) -> Any:
        """Scrub every string (keys and values) inside a JSON-like value; a value without
        anything to scrub is returned as is."""
        if not isinstance(value, str) and not self._has_secret(
            json.dumps(value, ensure_ascii=False, default=str)
        ):
            return value
        return self._walk(value)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self._walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(v) for v in value]
        return value


# --------------------------------------------------------------------------- session secret

SECRET_BYTES = 32  # 256 bits, url-safe base64: 43 characters


def new_secret() -> str:
    """A fresh, unguessable session secret (url-safe: usable as a path segment)."""
    return secrets.token_urlsafe(SECRET_BYTES)


def new_run_key() -> str:
    """A fresh, unguessable run key (192 bits)."""
    return secrets.token_urlsafe(24)


# --------------------------------------------------------------------------- log redaction

_LOG_SECRETS: set[str] = set()
_LOG_LOCK = threading.Lock()
_LOG_INSTALLED = False


def redact_text(text: str) -> str:
    """``text`` with every session secret registered in this process replaced."""
    for secret in tuple(_LOG_SECRETS):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def _redacting_factory(previous: Any) -> Any:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = previous(*args, **kwargs)
        if not _LOG_SECRETS:
            return record
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is logging's to report, not ours
            return record
        clean = redact_text(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[0] is not None:
            text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            if redact_text(text) != text:
                record.exc_text = redact_text(text)
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info)
        return record

    return factory


def redact_in_logs(secret: str) -> None:
    """Keep ``secret`` out of every log record this process creates from now on
    (idempotent; the record factory is installed once per process)."""
    global _LOG_INSTALLED
    with _LOG_LOCK:
        _LOG_SECRETS.add(secret)
        if not _LOG_INSTALLED:
            logging.setLogRecordFactory(_redacting_factory(logging.getLogRecordFactory()))
            _LOG_INSTALLED = True
