"""The hard spend cap across all runs of one gateway.

Before an upstream call a ceiling for its cost is reserved; the call is refused when the
spend so far plus every reservation plus this ceiling would pass the cap. After the call
the reservation is replaced by the cost computed from reported usage. When the upstream
reports no usage the cost stays unknown and the ceiling stays held, so the cap is never
passed on account of calls that could not be priced.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from pytest_sabot.gateway.protocol import BudgetState


class BudgetExhausted(Exception):
    """No new upstream call may be made under the cap."""


@dataclass
class Reservation:
    amount: float
    settled: bool = False


class Budget:
    def __init__(self, budget_usd: float | None) -> None:
        self.budget_usd = budget_usd
        self._lock = threading.Lock()
        self._spent = 0.0
        self._reserved = 0.0
        self._held_unknown = 0.0
        self._unknown_calls = 0
        self._exhausted = False

    def reserve(self, ceiling: float) -> Reservation:
        with self._lock:
            if self.budget_usd is not None:
                committed = self._spent + self._reserved + self._held_unknown
                if self._exhausted or committed + ceiling > self.budget_usd:
                    self._exhausted = True
                    raise BudgetExhausted(
                        f"spend cap of ${self.budget_usd:.4f} reached: "
                        f"${committed:.4f} spent or held, next call may cost up to "
                        f"${ceiling:.4f}"
                    )
            self._reserved += ceiling
            return Reservation(ceiling)

    def settle(self, reservation: Reservation, cost: float | None) -> None:
        """Replace a reservation by the actual cost (None: unknown, keep the ceiling held)."""
        with self._lock:
            if reservation.settled:
                return
            reservation.settled = True
            self._reserved -= reservation.amount
            if cost is None:
                self._unknown_calls += 1
                self._held_unknown += reservation.amount
            else:
                self._spent += cost

    def release(self, reservation: Reservation) -> None:
        """The call made no billable request (e.g. refused before sending)."""
        with self._lock:
            if not reservation.settled:
                reservation.settled = True
                self._reserved -= reservation.amount

    def state(self) -> BudgetState:
        with self._lock:
            return BudgetState(
                budget_usd=self.budget_usd,
                spent_usd=round(self._spent, 10),
                reserved_usd=round(max(self._reserved, 0.0) + self._held_unknown, 10),
                unknown_cost_calls=self._unknown_calls,
                exhausted=self._exhausted,
            )
