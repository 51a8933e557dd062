"""A global concurrency limit for upstream calls that halves under rate limiting and
grows back by one slot after a run of successes (additive increase, multiplicative
decrease).

Each slot carries the generation of the limit it was granted under; a 429 on a call that
started before the last halving does not halve again, so a burst of concurrent 429s
counts as one signal, while a retry that is rate limited again halves once more.

The gateways of one session may share a connection budget besides (gateway/slots.py): a
slot of the limit is then held together with one of the shared slots, taken after it, so
the calls of all of them together never pass the budget while the limit of each (whose
ceiling is then the whole budget) still halves under its own 429s. A gateway that shares
the budget may hold far fewer calls than its ceiling, so a 429 there halves what it holds
(and the call refused), not the ceiling: halving a ceiling of 16 to 8 while it holds 8
would not slow it at all."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_sabot.gateway.slots import SharedSlots


class SlotTimeout(Exception):
    """No slot came free within the time given."""


class AdaptiveLimit:
    def __init__(
        self, maximum: int, recover_after: int = 3, shared: SharedSlots | None = None
    ) -> None:
        self.maximum = max(1, maximum)
        self.shared = shared
        self.recover_after = max(1, recover_after)
        self._limit = self.maximum
        self._in_flight = 0
        self._waiting = 0  # calls waiting for a slot (of the limit or of the budget)
        self._holding = 0  # calls holding a slot of the shared budget
        self._successes = 0
        self._generation = 0
        self._cond = threading.Condition()

    @property
    def limit(self) -> int:
        with self._cond:
            return self._limit

    @property
    def waiting(self) -> int:
        """How many calls are waiting for a slot now."""
        with self._cond:
            return self._waiting

    def _waited(self) -> None:
        with self._cond:
            self._waiting -= 1

    @contextmanager
    def slot(self, timeout: float | None = None) -> Iterator[int]:
        """Hold one upstream slot; yields the limit's generation. SlotTimeout when none
        came free within ``timeout`` seconds (None: wait as long as it takes); with a
        shared budget, the wait for one of its slots counts in the same time."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._waiting += 1
            if not self._cond.wait_for(lambda: self._in_flight < self._limit, timeout):
                self._waiting -= 1
                raise SlotTimeout(f"no upstream slot free within {timeout:g}s")
            self._in_flight += 1
            generation = self._generation
        shared: int | None = None
        try:
            if self.shared is not None:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    shared = self.shared.acquire(left)
                finally:
                    self._waited()
                if shared is None:
                    raise SlotTimeout(
                        f"no connection of the session's budget free within {timeout:g}s"
                    )
                with self._cond:
                    self._holding += 1
            else:
                self._waited()
            yield generation
        finally:
            if shared is not None and self.shared is not None:
                self.shared.release(shared)
                with self._cond:
                    self._holding -= 1
            with self._cond:
                self._in_flight -= 1
                self._cond.notify_all()

    def rate_limited(self, generation: int) -> None:
        with self._cond:
            if generation != self._generation:
                return  # already halved for this burst
            self._generation += 1
            base = self._limit
            if self.shared is not None:  # what it holds, and the call refused
                base = min(base, self._holding + 1)
            self._limit = max(1, base // 2)
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
