"""The hard spend cap.

Before an upstream call its worst-case cost is reserved; the call is refused when the spend
so far plus this worst case would pass the cap, and waits (up to ``wait_s``) while the
worst cases held by calls in flight leave no room for it. After the call the reservation
is replaced by the cost computed from reported usage. When the upstream reports no usage
the cost stays unknown and the ceiling stays held, so the cap is never passed on account
of calls that could not be priced. Once a call is refused for the spend itself the breaker
stays open for the rest of the gateway's life.

With a ledger (``ledger.py``) the cap is the project's: the reservation is made in the
output root's ledger, shared with every other gateway and every earlier session there.
Without one it holds for this gateway's lifetime. Either way this gateway's own figures
are kept for its stats.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from pytest_sabot.gateway.ledger import BudgetExhausted, Ledger
from pytest_sabot.gateway.protocol import BudgetState

__all__ = ["Budget", "BudgetExhausted", "Payer", "Reservation"]

# How often a call waiting for room looks at the ledger again (other processes' holds
# settle without telling this one).
LEDGER_POLL_S = 0.05


class Payer(Protocol):
    """What a paid call is held against: a Budget, or a session account
    (``accounts.SessionAccount``) that holds it under two caps."""

    def reserve(self, ceiling: float, wait_s: float = 0.0) -> Any: ...

    def settle(self, reservation: Any, cost: float | None) -> None: ...

    def release(self, reservation: Any) -> None: ...


@dataclass
class Reservation:
    amount: float
    hold_id: str | None = None
    settled: bool = False


class Budget:
    def __init__(self, budget_usd: float | None, ledger: Ledger | None = None) -> None:
        self.budget_usd = budget_usd
        self.ledger = ledger
        self._cond = threading.Condition()
        self._spent = 0.0
        self._reserved = 0.0
        self._held_unknown = 0.0
        self._unknown_calls = 0
        self._exhausted = False

    def _refuse(self, why: str) -> BudgetExhausted:
        self._exhausted = True
        return BudgetExhausted(why)

    def _try_reserve(self, ceiling: float) -> str | bool | None:
        """A hold id (ledger), True (reserved here), or None (no room yet)."""
        if self.ledger is not None:
            try:
                return self.ledger.try_reserve(ceiling, self.budget_usd)
            except BudgetExhausted as exc:
                raise self._refuse(str(exc)) from None
        if self.budget_usd is None:
            return True
        settled = self._spent + self._held_unknown
        if settled + ceiling > self.budget_usd:
            raise self._refuse(
                f"spend cap of ${self.budget_usd:.4f} reached: ${settled:.4f} spent, the "
                f"next call may cost up to ${ceiling:.4f}"
            )
        return True if settled + self._reserved + ceiling <= self.budget_usd else None

    def reserve(self, ceiling: float, wait_s: float = 0.0) -> Reservation:
        """Hold ``ceiling`` against the cap, waiting up to ``wait_s`` for calls in flight
        to make room; BudgetExhausted when there is none."""
        deadline = time.monotonic() + wait_s
        with self._cond:
            while True:
                if self._exhausted:
                    raise BudgetExhausted(
                        f"spend cap of ${self.budget_usd or 0:.4f} reached earlier in this session"
                    )
                got = self._try_reserve(ceiling)
                if got is not None:
                    self._reserved += ceiling
                    return Reservation(ceiling, got if isinstance(got, str) else None)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise BudgetExhausted(
                        f"no room under the spend cap of ${self.budget_usd or 0:.4f} within "
                        f"{wait_s:g}s: calls in flight hold their worst case (${ceiling:.4f} "
                        "needed)"
                    )
                poll = LEDGER_POLL_S if self.ledger is not None else remaining
                self._cond.wait(min(remaining, poll))

    def settle(self, reservation: Reservation, cost: float | None) -> None:
        """Replace a reservation by the actual cost (None: unknown, keep the ceiling held)."""
        with self._cond:
            if reservation.settled:
                return
            reservation.settled = True
            self._reserved -= reservation.amount
            if cost is None:
                self._unknown_calls += 1
                self._held_unknown += reservation.amount
            else:
                self._spent += cost
            if self.ledger is not None and reservation.hold_id is not None:
                self.ledger.settle(reservation.hold_id, cost)
            self._cond.notify_all()

    def release(self, reservation: Reservation) -> None:
        """The call made no billable request (e.g. refused before sending)."""
        with self._cond:
            if not reservation.settled:
                reservation.settled = True
                self._reserved -= reservation.amount
                if self.ledger is not None and reservation.hold_id is not None:
                    self.ledger.release(reservation.hold_id)
                self._cond.notify_all()

    def state(self) -> BudgetState:
        project = self.ledger.check() if self.ledger is not None else None
        with self._cond:
            return BudgetState(
                budget_usd=self.budget_usd,
                spent_usd=round(self._spent, 10),
                reserved_usd=round(max(self._reserved, 0.0) + self._held_unknown, 10),
                unknown_cost_calls=self._unknown_calls,
                exhausted=self._exhausted,
                ledger=str(self.ledger.path) if self.ledger is not None else None,
                project_spent_usd=round(project.spent_usd, 10) if project else None,
                project_committed_usd=round(project.committed_usd, 10) if project else None,
            )
