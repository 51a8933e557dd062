"""How a verdict shows wherever it is shown (terminal, JUnit, history, demo): one spelling
per verdict, a letter and a category for pytest's summary, and the funnel path as the
verbose word."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_sabot.core.models.verdict import BaselineVerdict, CellVerdict

# One spelling per verdict, everywhere (terminal, JUnit, docs): the word of a cell's
# outcome. Its lower case is the summary category.
BASELINE_PASS = "BASELINE_PASS"
BASELINE_FAIL = "BASELINE_FAIL"
RUN_ERROR = "RUN_ERROR"
STRUCTURAL_ZERO = "STRUCTURAL_ZERO"
NOT_RUN_BUDGET = "NOT_RUN"
LETTERS = {
    BASELINE_PASS: "P",
    "BASELINE_FAIL_OWN": "B",  # a baseline that failed its task (same word, own letter)
    BASELINE_FAIL: "b",  # a fault cell excluded because its baseline failed
    RUN_ERROR: "R",
    "INJECTION_UNVERIFIED": "I",
    "DETECTED_HARD": "H",
    "DETECTED_SOFT": "S",
    "MISSED": "M",
    "UNJUDGED": "U",
    STRUCTURAL_ZERO: "z",
    NOT_RUN_BUDGET: "-",
}


@dataclass(frozen=True)
class Outcome:
    """How a cell shows in pytest: category (summary count), letter and verbose word."""

    category: str
    letter: str
    word: str
    verdict: str  # the one word of the verdict (sabot.verdict in JUnit)


def funnel_word(v: CellVerdict) -> str:
    """The verbose word: the whole funnel path, e.g. 'DETECTED_HARD REACTED RECOVERED'."""
    parts: list[str] = [v.detection]
    if v.reacted:
        parts.append("REACTED")
    if v.recovered:
        parts.append("RECOVERED")
    return " ".join(parts)


def outcome_of(verdict: CellVerdict | BaselineVerdict) -> Outcome:
    if isinstance(verdict, BaselineVerdict):
        if verdict.status == "passed":
            return Outcome("baseline_pass", "P", BASELINE_PASS, BASELINE_PASS)
        if verdict.status == "RUN_ERROR":
            return Outcome("run_error", "R", RUN_ERROR, RUN_ERROR)
        return Outcome("baseline_fail", "B", BASELINE_FAIL, BASELINE_FAIL)
    if verdict.excluded is not None:
        code = verdict.excluded.code
        return Outcome(code.lower(), LETTERS.get(code, "x"), code, code)
    detection = str(verdict.detection)
    return Outcome(detection.lower(), LETTERS.get(detection, "?"), funnel_word(verdict), detection)


STRUCTURAL = Outcome(
    "structural_zero", "z", "STRUCTURAL_ZERO (registered, not run)", STRUCTURAL_ZERO
)
BUDGET_STOP = Outcome("not_run", "-", "NOT_RUN (stopped by the spend cap)", NOT_RUN_BUDGET)
