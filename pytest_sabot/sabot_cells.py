"""The test module a Sabot wave is collected from: one ``test_cell`` per registered cell.

The plugin parametrizes ``sabot_cell_id`` from the wave file (``--sabot-wave``); each test
runs its cell's real pipeline and records the verdict as the test's outcome. A correctly
adjudicated cell passes whatever its verdict; only a harness failure fails the test.
"""

from __future__ import annotations

from typing import Any


def test_cell(sabot_cell_id: str, sabot_cell: Any, sabot_run: Any) -> None:
    result = sabot_run(sabot_cell)
    assert result["cell_id"] == sabot_cell_id
