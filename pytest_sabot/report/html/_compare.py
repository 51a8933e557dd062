"""The compare page: :func:`pytest_sabot.results.compare.compare`'s result shaped for the template.

Every number (both scores, the paired difference and its interval, the flip counts, the
cells valid in one run only) is the Comparison's. The only thing read beside it is which
paired cells flipped, listed by name so a reader can open them; the list is grouped by
row and its lengths are the Comparison's own A-only / B-only counts (the tests check it).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from pytest_sabot.core.models.verdict import CellVerdict
from pytest_sabot.report.html._common import is_rate
from pytest_sabot.results import ResultsFile
from pytest_sabot.results.compare import Comparison

SHOWN_ROW = {
    "row", "a", "b", "paired", "difference", "ci_low", "ci_high", "detected_a_only",
    "detected_b_only", "one_sided",
}


@dataclass(frozen=True)
class Flip:
    cell_id: str
    row: str
    detected_in: str  # 'A' or 'B'


@dataclass
class CompareView:
    comparison: dict[str, Any]
    flips: dict[str, list[Flip]]
    extra_row_rates: list[str]
    predictions: list[dict[str, Any]] | None
    fixture_note: str


def _paired_flips(a: ResultsFile, b: ResultsFile) -> dict[str, list[Flip]]:
    """Cells valid in both runs whose hard-tier outcome differs, by row."""
    fa = {c.pair_key: c for c in a.cells if isinstance(c, CellVerdict) and c.excluded is None}
    fb = {c.pair_key: c for c in b.cells if isinstance(c, CellVerdict) and c.excluded is None}
    flips: dict[str, list[Flip]] = defaultdict(list)
    for k in sorted(fa.keys() & fb.keys()):
        if fa[k].detected_hard != fb[k].detected_hard:
            flips[fa[k].row].append(
                Flip(cell_id=fa[k].cell_id, row=fa[k].row,
                     detected_in="A" if fa[k].detected_hard else "B")
            )
    return dict(flips)


def build(comparison: Comparison, a: ResultsFile, b: ResultsFile) -> CompareView:
    data = comparison.model_dump(mode="json")
    extra = sorted({
        k for row in data.get("rows") or [] for k, v in row.items()
        if k not in SHOWN_ROW and is_rate(v)
    })
    predictions = data.get("predictions")
    note = ""
    if a.fixture or b.fixture:
        both = a.fixture and b.fixture
        who = "A and B are" if both else ("A is" if a.fixture else "B is")
        note = (f"{who} keyless: fixtures of the embedded model, not measurements; any "
                "difference involving them is a difference between fixtures")
    return CompareView(
        comparison=data,
        flips=_paired_flips(a, b),
        extra_row_rates=extra,
        predictions=predictions if isinstance(predictions, list) else None,
        fixture_note=note,
    )
