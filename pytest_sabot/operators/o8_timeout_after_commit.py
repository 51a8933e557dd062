"""O8 timeout_after_commit on a lab task: lost after commit: the write and its operation record
survive, the same generic timeout.

The fault itself lives in ``pytest_sabot.lab.faults.o8_timeout_after_commit``; this operator
arms it in the lab session of a cell and reports its landing probe
(``operators/lab_fault.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_sabot.operators.lab_fault import LabFault


@dataclass
class TimeoutAfterCommit(LabFault):
    """O8: timeout_after_commit."""
