"""The project's spend ledger: one file per output root that every gateway charges.

The standard's cap ($500) is for the project, not for one session: a wave that is resumed,
a second wave, and every gateway of a session (one in each xdist worker) all spend from the
same account. ``<root>/spend-ledger.json`` holds that account: what was spent from
reported usage, what is held for calls in flight, and what is held for calls whose cost
stayed unknown. Every change happens under a file lock (``filelock``) with read, check and
an atomic replace, so gateways in several processes never pass the cap between them.

A hold belongs to the process that made it. When that process is gone (killed, crashed)
its holds are kept as unknown spend: the call may have been billed, so its ceiling stays
charged. Nothing is ever removed from the account.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock
from pydantic import Field, ValidationError

from pytest_sabot.core.errors import SabotDataError, from_validation_error
from pytest_sabot.core.models.base import StrictModel
from pytest_sabot.core.trace_io import write_json_atomic

LEDGER_FILE = "spend-ledger.json"


class BudgetExhausted(Exception):
    """No new upstream call may be made under the cap."""


class LedgerHold(StrictModel):
    """The ceiling of one upstream call in flight."""

    usd: float = Field(ge=0, description="The call's worst-case cost, held against the cap.")
    gateway: str = Field(description="Id of the gateway that made the call.")
    host: str = Field(description="Host name of the process holding it.")
    pid: int = Field(description="Process id holding it (a dead one's holds become unknown).")
    since: float = Field(description="Unix time the hold was made.")


class LedgerGateway(StrictModel):
    """What one gateway (one session, or one worker of a session) spent."""

    started: str = Field(description="ISO time of the gateway's first charge.")
    session: str = Field(
        "", description="Run id of the pytest session the gateway served ('' when none)."
    )
    stopped: str | None = Field(
        None,
        description=(
            "ISO time the cap first refused one of its calls (its breaker opened); every "
            "process of its session reads this to stop before the next cell."
        ),
    )
    spent_usd: float = Field(0.0, ge=0, description="Its spend from reported usage.")
    calls: int = Field(0, ge=0, description="Its upstream calls settled with a known cost.")
    unknown_calls: int = Field(0, ge=0, description="Its calls whose cost stayed unknown.")


class SpendLedger(StrictModel):
    """``<output root>/spend-ledger.json``: the project's spend across sessions."""

    version: int = Field(1, description="Format version.")
    spent_usd: float = Field(0.0, ge=0, description="Spend computed from reported usage.")
    unknown_usd: float = Field(
        0.0,
        ge=0,
        description=(
            "Ceilings kept for calls whose cost is unknown (no usage reported, an answer "
            "lost, or a process that died holding them): charged, never released."
        ),
    )
    unknown_calls: int = Field(0, ge=0, description="Calls whose cost is unknown.")
    holds: dict[str, LedgerHold] = Field(
        default_factory=dict, description="Ceilings of the calls in flight, by hold id."
    )
    gateways: dict[str, LedgerGateway] = Field(
        default_factory=dict, description="Spend by gateway id, in the order they started."
    )

    @property
    def held_usd(self) -> float:
        return sum(h.usd for h in self.holds.values())

    @property
    def committed_usd(self) -> float:
        """Everything charged against the cap: spent, unknown and held."""
        return self.spent_usd + self.unknown_usd + self.held_usd


def _alive(host: str, pid: int) -> bool:
    """False only when the holder is known to be gone (same host, no such process)."""
    if host != socket.gethostname() or sys.platform == "win32":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A process that has ended but not been reaped yet (a killed xdist worker whose
    controller has not waited for it): it answers signal 0, yet holds nothing."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False  # no /proc to tell: taken as alive, as before
    # the state follows the command name, which is in parentheses and may hold spaces
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_ledger(directory: Path) -> SpendLedger:
    """The ledger of an output root (an empty one when none was written yet)."""
    path = directory / LEDGER_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return SpendLedger()
    except OSError as exc:
        raise SabotDataError(path, "", "a readable spend ledger", str(exc)) from exc
    try:
        return SpendLedger.model_validate_json(text)
    except ValidationError as exc:
        raise from_validation_error(path, exc) from exc


def session_stopped(directory: Path, session: str) -> bool:
    """Whether the cap has refused a call of any gateway of ``session`` (in any process:
    every xdist worker of a session has its own gateway, and they all charge this file).
    Read without the lock: the file is only ever replaced whole."""
    if not session:
        return False
    ledger = read_ledger(directory)
    return any(g.session == session and g.stopped for g in ledger.gateways.values())


class Ledger:
    """The spend ledger of one output root, as one gateway charges it."""

    def __init__(self, directory: Path, session: str = "") -> None:
        self.directory = directory
        self.path = directory / LEDGER_FILE
        self.session = session
        self.gateway = uuid.uuid4().hex[:16]
        self._host = socket.gethostname()
        self._file_lock = FileLock(str(self.path) + ".lock", thread_local=False)
        self._lock = threading.Lock()

    def check(self) -> SpendLedger:
        """Read the ledger now (a broken file is an error before anything is spent)."""
        return read_ledger(self.directory)

    def _load(self) -> SpendLedger:
        ledger = read_ledger(self.directory)
        for hold_id, hold in list(ledger.holds.items()):
            if not _alive(hold.host, hold.pid):
                del ledger.holds[hold_id]
                ledger.unknown_usd += hold.usd
                ledger.unknown_calls += 1
        return ledger

    def _mine(self, ledger: SpendLedger) -> LedgerGateway:
        entry = ledger.gateways.get(self.gateway)
        if entry is None:
            entry = LedgerGateway(started=_now(), session=self.session)
            ledger.gateways[self.gateway] = entry
        return entry

    def _save(self, ledger: SpendLedger) -> None:
        write_json_atomic(self.path, ledger.model_dump(mode="json"))

    def try_reserve(self, amount: float, cap: float | None) -> str | None:
        """Hold ``amount`` for one call and return the hold's id; None when the holds of
        calls in flight leave no room for it now (there will be once they settle);
        BudgetExhausted when the project's settled spend leaves no room for it at all."""
        # A session's own ledger, kept by a gateway it did not start, may not exist yet.
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._lock, self._file_lock:
            ledger = self._load()
            settled = ledger.spent_usd + ledger.unknown_usd
            if cap is not None and settled + amount > cap:
                mine = self._mine(ledger)  # listed with what it spent, even if nothing
                mine.stopped = mine.stopped or _now()
                self._save(ledger)
                raise BudgetExhausted(
                    f"project spend cap of ${cap:.4f} reached: ${settled:.4f} spent in "
                    f"{self.path}, the next call may cost up to ${amount:.4f}"
                )
            if cap is not None and ledger.committed_usd + amount > cap:
                return None
            hold_id = uuid.uuid4().hex
            ledger.holds[hold_id] = LedgerHold(
                usd=amount,
                gateway=self.gateway,
                host=self._host,
                pid=os.getpid(),
                since=time.time(),
            )
            self._mine(ledger)
            self._save(ledger)
            return hold_id

    def settle(self, hold_id: str, cost: float | None) -> None:
        """Replace a hold by the call's cost (None: unknown, its ceiling stays charged)."""
        with self._lock, self._file_lock:
            ledger = self._load()
            hold = ledger.holds.pop(hold_id, None)
            if hold is None:  # already turned into unknown spend by another process
                return
            mine = self._mine(ledger)
            if cost is None:
                ledger.unknown_usd += hold.usd
                ledger.unknown_calls += 1
                mine.unknown_calls += 1
            else:
                ledger.spent_usd += cost
                mine.spent_usd += cost
                mine.calls += 1
            self._save(ledger)

    def release(self, hold_id: str) -> None:
        """Drop a hold: the call made no billable request."""
        with self._lock, self._file_lock:
            ledger = self._load()
            if ledger.holds.pop(hold_id, None) is not None:
                self._save(ledger)
