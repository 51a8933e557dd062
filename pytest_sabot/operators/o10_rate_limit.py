"""O10 rate_limit on a lab task: a typed pre-write denial with a virtual retry delay.

The fault itself lives in ``pytest_sabot.lab.faults.o10_rate_limit``; this operator arms it
in the lab session of a cell and reports its landing probe (``operators/lab_fault.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_sabot.operators.lab_fault import LabFault


@dataclass
class RateLimit(LabFault):
    """O10: rate_limit."""
