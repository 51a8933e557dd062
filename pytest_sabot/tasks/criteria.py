"""The deterministic pass criterion of each task (the scorer's semantic oracle).

``evaluate_pass`` decides whether a final artifact is correct AND the required world
effects committed. It is deterministic and never hangs: T3's code runs in a separate,
isolated interpreter that is killed at the criterion's timeout.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pytest_sabot.core.models.task import (
    CitedAnswerCriterion,
    JsonRecordCriterion,
    PythonFunctionCriterion,
    TextFactsCriterion,
)
from pytest_sabot.tasks.checks import run_python
from pytest_sabot.tasks.contract import normalize_artifact
from pytest_sabot.tasks.loader import PrivateSpec


def _equal(expected: Any, got: Any, tol: float) -> bool:
    if isinstance(expected, bool) or isinstance(got, bool):
        return expected is got
    if isinstance(expected, int | float) and isinstance(got, int | float):
        return math.isclose(float(expected), float(got), abs_tol=tol)
    if isinstance(expected, dict) and isinstance(got, dict):
        return expected.keys() == got.keys() and all(
            _equal(expected[k], got[k], tol) for k in expected
        )
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(
            _equal(a, b, tol) for a, b in zip(expected, got, strict=True)
        )
    return bool(expected == got)


def _json_record(c: JsonRecordCriterion, artifact: str) -> tuple[bool, str]:
    try:
        got = json.loads(artifact)
    except ValueError:
        return False, "the artifact is not valid JSON"
    if not isinstance(got, dict):
        return False, "the artifact is not a JSON object"
    missing = [k for k in c.expected if k not in got]
    if missing:
        return False, f"missing fields: {', '.join(missing)}"
    extra = [k for k in got if k not in c.expected]
    if extra:
        return False, f"unexpected fields: {', '.join(extra)}"
    wrong = [k for k in c.expected if not _equal(c.expected[k], got[k], c.tolerance)]
    if wrong:
        details = "; ".join(
            f"{k}={json.dumps(got[k])} (expected {json.dumps(c.expected[k])})" for k in wrong
        )
        return False, f"wrong values: {details}"
    return True, "record matches"


def _text_facts(c: TextFactsCriterion, artifact: str) -> tuple[bool, str]:
    lowered = artifact.lower()
    absent = [group for group in c.required if not any(alt.lower() in lowered for alt in group)]
    if absent:
        return False, "missing facts: " + "; ".join(" | ".join(g) for g in absent)
    present = [f for f in c.forbidden if f.lower() in lowered]
    if present:
        return False, "contains wrong figures or names: " + ", ".join(present)
    return True, "all facts present, no wrong figure"


def _python_function(c: PythonFunctionCriterion, artifact: str) -> tuple[bool, str]:
    exprs = [f"{c.function}(*{case.args!r})" for case in c.cases]
    outcome = run_python(artifact, exprs, c.timeout_s)
    if "results" not in outcome:
        return (
            False,
            f"the module could not be run: {outcome.get('load_error') or outcome.get('error')}",
        )
    failures: list[str] = []
    for case, (_ok, detail) in zip(c.cases, outcome["results"], strict=False):
        call = f"{c.function}{tuple(case.args)!r}"
        if case.expected == "ValueError":
            if not str(detail).startswith("ValueError"):
                failures.append(f"{call} should raise ValueError, got {detail}")
            continue
        try:
            value = float(str(detail))
        except ValueError:
            failures.append(f"{call} -> {detail} (expected {case.expected})")
            continue
        if not math.isclose(value, float(case.expected), abs_tol=c.tolerance):
            failures.append(f"{call} -> {value:g} (expected {case.expected})")
    if failures:
        return False, f"{len(failures)} of {len(c.cases)} cases wrong: " + "; ".join(failures[:3])
    return True, f"all {len(c.cases)} cases correct"


def _line(artifact: str, prefix: str) -> str | None:
    for line in artifact.splitlines():
        if line.startswith(prefix):
            return line[len(prefix) :].strip()
    return None


def _squash(text: str) -> str:
    return " ".join(text.split())


def _cited_answer(c: CitedAnswerCriterion, artifact: str) -> tuple[bool, str]:
    answer, quote, source = (_line(artifact, p) for p in ("ANSWER:", "QUOTE:", "SOURCE:"))
    if answer is None or quote is None or source is None:
        return False, "the ANSWER, QUOTE and SOURCE lines are not all present"
    lowered = answer.lower()
    missing = [s for s in c.answer_required if s.lower() not in lowered]
    if missing:
        return False, f"the answer lacks: {', '.join(missing)}"
    wrong = [
        s for s in c.answer_forbidden if re.search(rf"(?<![\d.]){re.escape(s)}(?![\d])", answer)
    ]
    if wrong:
        return False, f"the answer states wrong figures: {', '.join(wrong)}"
    if _squash(quote.strip().strip('"“”')) != _squash(c.quote):
        return False, "the quotation is not the source sentence verbatim"
    if c.source.lower() not in source.lower():
        return False, f"the source line does not name {c.source!r}"
    return True, "answer, verbatim quotation and source correct"


def evaluate_pass(
    private: PrivateSpec, artifact: str, effects: dict[str, bool]
) -> tuple[bool, str]:
    """(passed, reason). Passes only when the artifact meets the task's criterion AND every
    required effect committed (the artifact file present in the workspace with the final
    artifact's content)."""
    uncommitted = [name for name in private.required_effects if not effects.get(name, False)]
    if uncommitted:
        return False, f"required effect not committed: {', '.join(uncommitted)}"
    text = normalize_artifact(artifact)
    c = private.criterion
    if c is None:
        raise ValueError("a lab task passes by its lab gate, judged from the lab record "
                         "(harness/lab_bridge.py lab_pass), not from its report")
    if isinstance(c, JsonRecordCriterion):
        return _json_record(c, text)
    if isinstance(c, TextFactsCriterion):
        return _text_facts(c, text)
    if isinstance(c, PythonFunctionCriterion):
        return _python_function(c, text)
    return _cited_answer(c, text)
