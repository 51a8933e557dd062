"""results.json's spend agrees with the spend ledger (SPEC I51, I71): a worker that crashed
reports nothing, yet what its gateway charged is in the ledger and counts for the session;
the project's figures are the ledger's once the session is done; a killed worker not yet
reaped holds nothing."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pytest_sabot.gateway.ledger import Ledger, _alive
from pytest_sabot.session.gateway import with_ledger


def _charge(directory: Path, session: str, usd: float, *, settle: bool = True) -> None:
    ledger = Ledger(directory, session=session)
    hold = ledger.try_reserve(usd, cap=100.0)
    assert hold is not None
    if settle:
        ledger.settle(hold, usd)


def test_I71_a_crashed_workers_charges_count_for_the_session(tmp_path: Path) -> None:
    _charge(tmp_path, "run-1", 0.20)  # the worker that reported
    _charge(tmp_path, "run-1", 0.15)  # the worker that crashed: it reported nothing
    _charge(tmp_path, "run-0", 1.00)  # an earlier session of the project
    reported = {"calls": 1, "budget": {"spent_usd": 0.20, "unknown_cost_calls": 0,
                                       "project_spent_usd": 1.20,
                                       "project_committed_usd": 9.99}}
    spent = with_ledger(reported, tmp_path, "run-1")
    assert spent["budget"]["spent_usd"] == pytest.approx(0.35)
    assert spent["budget"]["project_spent_usd"] == pytest.approx(1.35)
    # the ledger's committed once every hold is settled, not a worker's read in flight
    assert spent["budget"]["project_committed_usd"] == pytest.approx(1.35)
    assert spent["calls"] == 1 and reported["budget"]["spent_usd"] == 0.20  # not changed


def test_I71_a_session_the_ledger_does_not_name_keeps_what_its_gateways_said(
        tmp_path: Path) -> None:
    reported = {"budget": {"spent_usd": 0.5, "unknown_cost_calls": 2}}
    assert with_ledger(reported, tmp_path, "run-9") == reported


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_I71_a_killed_process_not_yet_reaped_is_not_alive() -> None:
    import socket

    pid = os.fork()
    if pid == 0:  # the child ends at once and stays a zombie until waited for
        os._exit(0)
    try:
        deadline = time.monotonic() + 10
        while _alive(socket.gethostname(), pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _alive(socket.gethostname(), pid)
    finally:
        os.waitpid(pid, 0)
    assert _alive(socket.gethostname(), os.getpid())
