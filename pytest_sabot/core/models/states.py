"""The words a session's record uses for how it ended and why a cell has no record (kept
apart, so the session's manifest and results.json share them without importing each
other)."""

from __future__ import annotations

from typing import Literal

NotRunReason = Literal[
    "interrupted",
    "budget",
    "crashed worker",
    "output unwritable",
    "stopped",
    "not reached",
    "pending",
    "damaged record",
]
SessionStatus = Literal[
    "running",
    "complete",
    "interrupted",
    "budget-stopped",
    "output-unwritable",
    "stopped",
    "crashed-workers",
]
