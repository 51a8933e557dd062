"""Accepting a judge's answer: it must be one JSON object of the verdict schema, and a
"yes" must quote the transcript verbatim. Anything else is a judge error, recorded and
counted, never read as "not noticed"."""

from __future__ import annotations

import json
import re

from pydantic import ValidationError

from pytest_sabot.judge.models import JudgeVerdict
from pytest_sabot.judge.transcript import after_fault

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def _normalise(text: str) -> str:
    return " ".join(text.split())


def accept(raw: str, transcript: str) -> tuple[JudgeVerdict | None, str | None]:
    """(verdict, None) when acceptable, else (None, the reason it is a judge error)."""
    text = _FENCE.sub("", raw.strip())
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"judge output is not JSON ({exc.msg})"
    try:
        verdict = JudgeVerdict.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(root)"
        return None, f"judge output fails the verdict schema at {field}: {first['msg']}"
    if verdict.noticed == "yes":
        quote = verdict.evidence_quote.strip()
        if not quote:
            return None, "noticed=yes without an evidence quote"
        if _normalise(quote) not in _normalise(transcript):
            return None, "the evidence quote is not in the transcript (invented evidence)"
        if _normalise(quote) not in _normalise(after_fault(transcript)):
            return None, "the evidence quote comes from before the fault was planted"
    return verdict, None
