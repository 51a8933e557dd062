"""A global concurrency limit for upstream calls that halves under rate limiting and
grows back by one slot after a run of successes (additive increase, multiplicative
decrease).

Each slot carries the generation of the limit it was granted under; a 429 on a call that
started before the last halving does not halve again, so a burst of concurrent 429s
counts as one signal, while a retry that is rate limited again halves once more."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class SlotTimeout(Exception):
    """No slot came free within the time given."""


class AdaptiveLimit:
    def __init__(self, maximum: int, recover_after: int = 3) -> None:
        self.maximum = max(1, maximum)
        self.recover_after = max(1, recover_after)
        self._limit = self.maximum
        self._in_flight = 0
        self._successes = 0
        self._generation = 0
        self._cond = threading.Condition()

    @property
    def limit(self) -> int:
        with self._cond:
            return self._limit

    @contextmanager
    def slot(self, timeout: float | None = None) -> Iterator[int]:
        """Hold one upstream slot; yields the limit's generation. SlotTimeout when none
        came free within ``timeout`` seconds (None: wait as long as it takes)."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._in_flight < self._limit, timeout):
                raise SlotTimeout(f"no upstream slot free within {timeout:g}s")
            self._in_flight += 1
            generation = self._generation
        try:
            yield generation
        finally:
            with self._cond:
                self._in_flight -= 1
                self._cond.notify_all()

    def rate_limited(self, generation: int) -> None:
        with self._cond:
            if generation != self._generation:
                return  # already halved for this burst
            self._generation += 1
            self._limit = max(1, self._limit // 2)
            self._successes = 0

    def succeeded(self) -> None:
        with self._cond:
            if self._limit >= self.maximum:
                return
            self._successes += 1
            if self._successes >= self.recover_after:
                self._successes = 0
                self._limit += 1
                self._cond.notify_all()
