"""O11 stale_read on a lab task: a real earlier committed snapshot answers a read.

The fault itself lives in ``pytest_sabot.lab.faults.o11_stale_read``; this operator arms it
in the lab session of a cell and reports its landing probe (``operators/lab_fault.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_sabot.operators.lab_fault import LabFault


@dataclass
class StaleRead(LabFault):
    """O11: stale_read."""
