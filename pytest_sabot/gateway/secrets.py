"""Scrubbing of API keys and auth headers from anything the gateway writes or serves.

A value is scrubbed when it equals a known key (the provider key read from the
environment, any bearer token a client presented) or matches a key-shaped pattern
('Bearer ...', 'sk-...').
"""

from __future__ import annotations

import json
import re
import threading
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
