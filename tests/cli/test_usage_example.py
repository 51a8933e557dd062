"""The user test shown in docs/USAGE.md runs as written, with the plugin's fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent
EXAMPLE = HERE / "user_cell_example.py"
USAGE = HERE.parents[1] / "docs" / "USAGE.md"


def test_usage_md_shows_the_example_verbatim() -> None:
    assert EXAMPLE.read_text(encoding="utf-8") in USAGE.read_text(encoding="utf-8")


@pytest.mark.slow
def test_user_cell_test_runs_with_sabot_standard_and_sabot_gateway(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_my_cell=EXAMPLE.read_text(encoding="utf-8"))
    # the command USAGE.md gives: the wave's own cells are deselected by their marker
    result = pytester.runpytest(
        "test_my_cell.py", "--sabot-wave=3", "-m", "not sabot_cell", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1, deselected=1050)

