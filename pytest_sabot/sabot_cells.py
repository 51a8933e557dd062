"""The test module a Sabot wave is collected from: one ``test_cell`` per registered cell.

The plugin parametrizes ``sabot_cell_id`` from the wave file (``--sabot-wave``). The cell's
real pipeline runs while the test is set up (``sabot_cell_result``), so a failure of the
harness itself shows as a pytest error (E); a correctly adjudicated cell passes whatever
its verdict, which is shown as the test's outcome. A registered structural zero is skipped.
"""

from __future__ import annotations

from typing import Any


def test_cell(sabot_cell_id: str, sabot_cell_result: dict[str, Any]) -> None:
    assert sabot_cell_result["cell_id"] == sabot_cell_id
