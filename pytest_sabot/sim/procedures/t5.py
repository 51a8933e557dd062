"""T5, document QA with a verbatim citation: answer the crew's winter-mulch question
from the care standard, depth from the clause service, the supporting sentence quoted
word for word.

Weak tier (O4): the quotation is paraphrased rather than quoted, and the paraphrase
drops "the first frost" and "sustained below".
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from pytest_sabot.core.prompt_format import Section
from pytest_sabot.sim.procedures import common as c
from pytest_sabot.sim.procedures.types import ExchangeLike, Finding, Step

STANDARD = "care_standard.md"
PREFIXES = ("ANSWER:", "QUOTE:", "SOURCE:")
_CLAUSE = re.compile(
    r"^(\d+\.\d+) Winter mulching\.\s*(.*?)(?=\n\s*\n|\Z)", re.MULTILINE | re.DOTALL
)
_DEPTH_OBS = re.compile(r"depth (\d+(?:\.\d+)?) inches")
_DEPTH = re.compile(r"(\d+(?:\.\d+)?) inches")
_REV = re.compile(r"\brev (\d+)\b")
_LIMIT = re.compile(r"at most (\d+) characters")


def squash(text: str) -> str:
    return " ".join(text.split())


def sentences(text: str) -> list[str]:
    """Sentences of a paragraph, keeping decimal numbers (1.8) intact."""
    return [s.strip() for s in re.split(r"(?<=[a-z]\.)\s+(?=[A-Z])", squash(text)) if s.strip()]


def clause(sections: Sequence[Section]) -> tuple[str, str]:
    """(clause number, the clause's first sentence) for winter mulching."""
    m = _CLAUSE.search(c.material(sections, STANDARD))
    if not m:
        return "", ""
    parts = sentences(m.group(2))
    return m.group(1), parts[0] if parts else ""


def _paraphrase(quote: str) -> str:
    depth = _DEPTH.search(quote)
    amount = depth.group(1) if depth else "some"
    return f"Mulch should go down {amount} inches deep once frost comes and the soil stays cold."


def compose(number: str, quote: str, depth: str, weak: bool) -> str:
    if weak:
        text = _paraphrase(quote)
        answer = f"Lay winter mulch {depth} inches deep once frost comes and the soil stays cold."
    else:
        text = quote
        tail = quote.split(" inches ", 1)[1] if " inches " in quote else quote
        tail = tail.replace("soil temperature has sustained below", "the soil has stayed below")
        answer = f"Lay winter mulch {depth} inches deep around the new saplings {tail}"
    return f'ANSWER: {answer}\nQUOTE: "{text}"\nSOURCE: {STANDARD}, clause {number}'


def worker_step(
    sections: Sequence[Section], history: Sequence[ExchangeLike], *, weak: bool
) -> Step:
    number, quote = clause(sections)

    def build(observations: dict[str, str]) -> str:
        m = _DEPTH_OBS.search(observations.get(number, ""))
        return compose(number, quote, m.group(1) if m else "unknown", weak)

    def quotation(draft: str) -> str:
        return _line(draft, "QUOTE:").strip('"')

    return c.drive(sections, history, [number] if number else [], build, quotation)


def _line(text: str, prefix: str) -> str:
    for line in text.splitlines():
        if line.startswith(prefix):
            return line[len(prefix) :].strip()
    return ""


def contract_problems(sections: Sequence[Section]) -> list[str]:
    text = c.draft(sections)
    if not text:
        return ["the artifact is empty"]
    out: list[str] = []
    limit = _LIMIT.search(squash(c.body(sections, "CONTRACT")))
    if limit and len(text) > int(limit.group(1)):
        out.append(f"the artifact is {len(text)} characters; the limit is {limit.group(1)}")
    lines = text.splitlines()
    positions = []
    for prefix in PREFIXES:
        hits = [i for i, line in enumerate(lines) if line.startswith(prefix)]
        if len(hits) != 1:
            out.append(f"no line starts with {prefix!r}" if not hits else f"several {prefix} lines")
        else:
            positions.append(hits[0])
    if not out and positions != sorted(positions):
        out.append("the ANSWER, QUOTE and SOURCE lines are out of order")
    quote = _line(text, "QUOTE:")
    quoted = len(quote) >= 2 and quote[0] in '"“' and quote[-1] in '"”'
    if "QUOTE:" in text and not quoted:
        out.append("the QUOTE line must hold a text in double quotes")
    return out


def review(sections: Sequence[Section]) -> list[Finding]:
    out = c.generic_findings(sections)
    text = c.draft(sections)
    standard = c.material(sections, STANDARD)
    if not text or not standard:
        return out
    number, source_sentence = clause(sections)
    rev = _REV.search(standard)
    where = f"{STANDARD} (rev {rev.group(1)})" if rev else STANDARD
    quote = squash(_line(text, "QUOTE:").strip().strip('"“”'))
    if quote and quote not in squash(standard):
        was, now = _first_difference(source_sentence, quote)
        out.append(
            Finding(
                f"the QUOTE is not verbatim in {where}: it says {now!r} where clause {number} "
                f'reads {was!r}; the clause reads: "{source_sentence}"',
                (now, was),
                "the quotation is not word for word what the standard says",
            )
        )
    expected = _DEPTH.search(source_sentence)
    answer = _line(text, "ANSWER:")
    given = _DEPTH.search(answer)
    if expected and given and given.group(1) != expected.group(1):
        out.append(
            Finding(
                f"the ANSWER gives {given.group(1)} inches but clause {number} of {where} says "
                f"{expected.group(1)} inches",
                (given.group(1), expected.group(1)),
                "the answer's depth differs from the standard",
            )
        )
    for call in c.calls_of(c.tool_log(sections), sections, "data"):
        served = _DEPTH_OBS.search(call.observation)
        if (
            expected
            and served
            and f"clause {number}" in call.observation
            and served.group(1) != expected.group(1)
        ):
            out.append(
                Finding(
                    f"{call.tool} returned a depth of {served.group(1)} inches for clause "
                    f"{number} while {where} says {expected.group(1)} inches",
                    (served.group(1), expected.group(1)),
                    "the clause service and the standard disagree on the depth",
                )
            )
    return out


def _first_difference(source: str, quote: str) -> tuple[str, str]:
    a, b = source.split(), quote.split()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            return " ".join(a[i1:i2]) or "(nothing)", " ".join(b[j1:j2]) or "(nothing)"
    return source, quote


def looks_like_artifact(text: str) -> bool:
    return any(line.startswith("ANSWER:") for line in text.splitlines())
