"""The spend ledger shared by the gateways of several processes (SPEC I51, I71): holds and
settlements from four processes at once lose no update and never pass the cap, and the
session whose gateway the cap refused is known to every process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_sabot.gateway.ledger import Ledger, read_ledger, session_stopped

CAP = 30.0
CEILING = 1.0
COST = 0.25
PROCESSES = 4

CHARGER = """
import sys, time
from pathlib import Path
from pytest_sabot.gateway.ledger import BudgetExhausted, Ledger

ledger = Ledger(Path(sys.argv[1]), session=sys.argv[2])
settled = 0
while True:
    try:
        hold = ledger.try_reserve({ceiling}, {cap})
    except BudgetExhausted:
        break
    if hold is None:  # the other processes' holds leave no room now
        time.sleep(0.001)
        continue
    ledger.settle(hold, {cost})
    settled += 1
print(settled)
"""


@pytest.mark.slow
def test_I71_four_processes_charging_one_ledger_lose_no_update_and_stay_under_the_cap(
    tmp_path: Path,
) -> None:
    script = CHARGER.format(ceiling=CEILING, cap=CAP, cost=COST)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path), "run-a"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    counts = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        counts.append(int(out.strip()))
    ledger = read_ledger(tmp_path)
    assert ledger.holds == {}
    # every settlement of every process is in the file: none was lost to a race
    assert sum(g.calls for g in ledger.gateways.values()) == sum(counts)
    assert ledger.spent_usd == pytest.approx(COST * sum(counts))
    assert ledger.committed_usd <= CAP
    # the cap was reached: every process's gateway was refused, and says so
    assert ledger.spent_usd + CEILING > CAP
    assert len(ledger.gateways) == PROCESSES
    assert all(g.session == "run-a" and g.stopped for g in ledger.gateways.values())


def test_I71_the_session_the_cap_stopped_is_read_from_the_ledger(tmp_path: Path) -> None:
    from pytest_sabot.gateway.ledger import BudgetExhausted

    assert not session_stopped(tmp_path, "run-b")  # no ledger yet
    ledger = Ledger(tmp_path, session="run-b")
    hold = ledger.try_reserve(1.0, 2.0)
    assert hold is not None
    ledger.settle(hold, 1.5)
    assert not session_stopped(tmp_path, "run-b")
    with pytest.raises(BudgetExhausted):
        ledger.try_reserve(1.0, 2.0)
    assert session_stopped(tmp_path, "run-b")
    assert not session_stopped(tmp_path, "run-c")  # another session's stop is not ours
    assert not session_stopped(tmp_path, "")
