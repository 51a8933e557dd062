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
STRUCTURAL_ZERO_SKIP = "STRUCTURAL_ZERO: registered carve-out, never run (SPEC S3.4)"
"""The skip message of a structural zero's testcase, in the session's JUnit and the
export's alike."""
UNPAIRED = "UNPAIRED"
BASELINE_LETTERS = {BASELINE_PASS: "P", BASELINE_FAIL: "B", RUN_ERROR: "R"}
"""A baseline's letter: its own outcome (a baseline that failed its task is ``B``)."""
LETTERS = {
    BASELINE_FAIL: "b",  # a fault cell excluded because its baseline failed
    RUN_ERROR: "R",
    "INJECTION_UNVERIFIED": "I",
    "DETECTED_HARD": "H",
    "DETECTED_SOFT": "S",
    "MISSED": "M",
    "UNJUDGED": "U",
    STRUCTURAL_ZERO: "z",
    NOT_RUN_BUDGET: "-",
    UNPAIRED: "u",  # a fault cell of one run with no partner in the other (history)
}
"""A fault cell's letter, by its verdict word: the one letter table of every surface that
shows a cell as a letter (pytest's progress line, ``sabot history``; docs/USAGE.md)."""
ORDER = "PBHSMURbIz-u"
"""The letters in the order a count of them is shown (``sabot history``)."""
LEGEND = (
    "P baseline pass, B baseline fail, H detected hard, S detected soft, M missed, "
    "U unjudged, R run error, b excluded (baseline failed), I injection unverified, "
    "z structural zero, - not run, u unpaired"
)
"""The letters in words, as ``sabot history`` prints them under its table."""


def letter(word: str, *, baseline: bool = False) -> str:
    """The letter of a cell shown by its verdict word; ``baseline`` for a baseline cell
    (``BASELINE_FAIL`` is ``B`` for a baseline, ``b`` for a fault cell it excluded)."""
    if baseline and word in BASELINE_LETTERS:
        return BASELINE_LETTERS[word]
    return LETTERS.get(word, "?")


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
            word = BASELINE_PASS
        elif verdict.status == "RUN_ERROR":
            word = RUN_ERROR
        else:
            word = BASELINE_FAIL
        return Outcome(word.lower(), letter(word, baseline=True), word, word)
    if verdict.excluded is not None:
        code = verdict.excluded.code
        return Outcome(code.lower(), LETTERS.get(code, "x"), code, code)
    detection = str(verdict.detection)
    return Outcome(detection.lower(), LETTERS.get(detection, "?"), funnel_word(verdict), detection)


STRUCTURAL = Outcome(
    "structural_zero", LETTERS[STRUCTURAL_ZERO], "STRUCTURAL_ZERO (registered, not run)",
    STRUCTURAL_ZERO,
)
BUDGET_STOP = Outcome(
    "not_run", LETTERS[NOT_RUN_BUDGET], "NOT_RUN (stopped by the spend cap)", NOT_RUN_BUDGET
)


def cell_gate(v: CellVerdict | BaselineVerdict) -> str | None:
    """A wave cell's gate (SPEC I78): a run error fails it; otherwise the task's pass
    criterion on the final artifact decides ("pass" or "fail"); None for a fault cell
    that has no run of its own to gate (excluded because its baseline failed) or whose
    criterion was not run."""
    if isinstance(v, BaselineVerdict):
        return "fail" if v.status == "RUN_ERROR" else ("pass" if v.status == "passed" else "fail")
    if v.excluded is not None and v.excluded.code == "RUN_ERROR":
        return "fail"
    if v.excluded is not None and v.excluded.code == "BASELINE_FAIL":
        return None
    if v.recovered is None:
        return None
    return "pass" if v.recovered else "fail"
