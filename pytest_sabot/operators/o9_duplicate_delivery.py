"""O9 duplicate_delivery on a lab task: one call delivered twice; the server's idempotency
contract decides.

The fault itself lives in ``pytest_sabot.lab.faults.o9_duplicate_delivery``; this operator
arms it in the lab session of a cell and reports its landing probe
(``operators/lab_fault.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_sabot.operators.lab_fault import LabFault


@dataclass
class DuplicateDelivery(LabFault):
    """O9: duplicate_delivery."""
