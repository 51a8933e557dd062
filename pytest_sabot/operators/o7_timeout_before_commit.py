"""O7 timeout_before_commit on a lab task: lost before commit: no write, no operation record, a
generic timeout.

The fault itself lives in ``pytest_sabot.lab.faults.o7_timeout_before_commit``; this
operator arms it in the lab session of a cell and reports its landing probe
(``operators/lab_fault.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_sabot.operators.lab_fault import LabFault


@dataclass
class TimeoutBeforeCommit(LabFault):
    """O7: timeout_before_commit."""
