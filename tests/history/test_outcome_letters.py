"""One outcome-letter table (``results.outcomes``): pytest's progress letters, the verdicts
column of ``sabot history`` and docs/USAGE.md's table say the same letter for a cell."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_sabot.core.models.verdict import BaselineVerdict
from pytest_sabot.history.render import LEGEND
from pytest_sabot.results.outcomes import (
    BASELINE_LETTERS,
    LETTERS,
    ORDER,
    letter,
    outcome_of,
)

USAGE = Path(__file__).resolve().parents[2] / "docs" / "USAGE.md"


def test_23_4_one_letter_per_outcome_and_every_letter_in_the_legend() -> None:
    letters = [*BASELINE_LETTERS.values(), *LETTERS.values()]
    assert sorted(set(letters)) == sorted(ORDER)  # R is the same letter for both kinds
    assert letter("BASELINE_FAIL", baseline=True) == "B"
    assert letter("BASELINE_FAIL") == "b"
    for mark in ORDER:
        assert re.search(rf"(^|, |cells: ){re.escape(mark)} ", LEGEND), mark


def test_23_4_usage_md_documents_the_same_letters() -> None:
    text = USAGE.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(.)` \| `([A-Z_]+)", text, flags=re.MULTILINE))
    assert rows.pop("r") == "RERUN"  # a worker crash, not a verdict
    assert rows["B"] == rows["b"] == "BASELINE_FAIL"  # one word, two letters
    assert set(rows) == set(ORDER)
    for mark, word in rows.items():
        assert letter(word, baseline=mark in BASELINE_LETTERS.values() and mark != "R") == mark


def test_23_4_pytest_shows_a_baseline_by_its_own_letter() -> None:
    base = {"cell_id": "langgraph-default-baseline-T1-s11", "wave": 1,
            "framework": "langgraph", "config": "default", "task": "T1", "seed": 11,
            "row": "langgraph-default", "rules": "v0.1.3", "any_flag": False}
    shown = {status: outcome_of(BaselineVerdict.model_validate({**base, "status": status}))
             for status in ("passed", "failed", "RUN_ERROR")}
    assert {s: o.letter for s, o in shown.items()} == {"passed": "P", "failed": "B",
                                                      "RUN_ERROR": "R"}
    assert shown["failed"].word == "BASELINE_FAIL" == shown["failed"].verdict
    assert shown["failed"].category == "baseline_fail"
