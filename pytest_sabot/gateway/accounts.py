"""Session accounts: the spend cap of a session that uses a gateway it did not start.

A pytest session given ``--sabot-gateway-url`` does not own the gateway's cap: the gateway
was started with its own (``--budget-usd``) and its own ledger. So the session registers
its own cap and the directory of its own spend ledger (``POST /sabot/sessions``) before any
cell runs, and names the account it was given in every run it registers. Every upstream
call of such a run is then held against both caps:

* the session's: in the session's ledger (``<dir>/spend-ledger.json``, written under the
  session's run id, so every process of the session sees when its cap stopped it);
* the gateway's own: in the gateway's ledger, as any call.

When the two ledgers are one file, the call is held there once, against the smaller cap,
so the project's spend is never counted twice. A registration is idempotent: the same
session with the same cap and ledger gets the same account (every xdist worker registers
it), a different cap or ledger under the same session is refused.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from pytest_sabot.gateway.budget import Budget, BudgetExhausted, Reservation
from pytest_sabot.gateway.ledger import LEDGER_FILE, Ledger, read_ledger
from pytest_sabot.gateway.protocol import BudgetState, SessionRegistration


@dataclass
class Hold:
    """One call's reservation in a session account (and in the gateway's, when apart)."""

    own: Reservation
    gateway: Reservation | None = None


def _same_file(a: Path, b: Path) -> bool:
    """Whether two ledger paths are one file: by the file itself (or, before it exists, its
    folder), so a folder reached by two paths (a bind mount, a container's volume) is one
    ledger, charged once."""
    try:
        for x, y in ((a, b), (a.parent, b.parent)):
            if x.exists() and y.exists():
                return (x is a or a.name == b.name) and os.path.samefile(x, y)
        return a.resolve() == b.resolve()
    except OSError:
        return False


@dataclass
class AccountCounts:
    """What a session's runs did at this gateway (its part of the gateway's stats)."""

    calls: int = 0
    fixture_calls: int = 0
    errors: int = 0
    upstream_calls: int = 0
    upstream_retries: int = 0
    runs: set[str] = field(default_factory=set)


class SessionAccount:
    """A session's cap at this gateway: reserve, settle and release, like a Budget."""

    def __init__(self, key: str, reg: SessionRegistration, gateway_budget: Budget) -> None:
        self.key = key
        self.reg = reg
        directory = Path(reg.spend_ledger) if reg.spend_ledger else None
        own_ledger = Ledger(directory, reg.session) if directory is not None else None
        shared = (
            own_ledger is not None
            and gateway_budget.ledger is not None
            and _same_file(own_ledger.path, gateway_budget.ledger.path)
        )
        cap = reg.budget_usd
        if shared and gateway_budget.budget_usd is not None:
            cap = min(cap, gateway_budget.budget_usd)
        self.budget = Budget(cap, own_ledger)
        self._gateway: Budget | None = None if shared else gateway_budget
        self._gateway_budget = gateway_budget
        self._lock = threading.Lock()
        self.counts = AccountCounts()

    def matches(self, reg: SessionRegistration) -> bool:
        return self.reg == reg

    # ------------------------------------------------------------------ the Payer protocol

    def reserve(self, ceiling: float, wait_s: float = 0.0) -> Hold:
        """Hold ``ceiling`` under the session's cap, then under the gateway's; either
        refusing leaves nothing held."""
        deadline = time.monotonic() + wait_s
        own = self.budget.reserve(ceiling, wait_s=wait_s)
        if self._gateway is None:
            return Hold(own)
        try:
            theirs = self._gateway.reserve(
                ceiling, wait_s=max(0.0, deadline - time.monotonic())
            )
        except BudgetExhausted:
            self.budget.release(own)
            raise
        return Hold(own, theirs)

    def settle(self, hold: Hold, cost: float | None) -> None:
        self.budget.settle(hold.own, cost)
        if self._gateway is not None and hold.gateway is not None:
            self._gateway.settle(hold.gateway, cost)

    def release(self, hold: Hold) -> None:
        self.budget.release(hold.own)
        if self._gateway is not None and hold.gateway is not None:
            self._gateway.release(hold.gateway)

    # ------------------------------------------------------------------ counters

    def sent(self) -> None:
        with self._lock:
            self.counts.upstream_calls += 1

    def retried(self) -> None:
        with self._lock:
            self.counts.upstream_retries += 1

    def answered(self, *, fixture: bool, error: bool) -> None:
        with self._lock:
            self.counts.calls += 1
            self.counts.fixture_calls += int(fixture)
            self.counts.errors += int(error)

    def state(self) -> BudgetState:
        """The session's figures; exhausted when its cap, or the gateway's, refused a call."""
        own = self.budget.state()
        gateway_exhausted = self._gateway_budget.state().exhausted
        return own.model_copy(update={"exhausted": own.exhausted or gateway_exhausted})


def check_ledger_dir(reg: SessionRegistration) -> str | None:
    """Why the session's ledger directory cannot be kept by this gateway (None when it
    can): it must be an absolute path, a directory when it exists, and its ledger readable."""
    if reg.spend_ledger is None:
        return None
    directory = Path(reg.spend_ledger)
    if not directory.is_absolute():
        return f"spend_ledger: an absolute directory, got {reg.spend_ledger!r}"
    if directory.exists() and not directory.is_dir():
        return f"spend_ledger: {directory} is not a directory"
    if (directory / LEDGER_FILE).exists():
        read_ledger(directory)  # a broken file is named before anything is spent
    return None
