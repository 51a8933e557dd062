"""Section 5, the verdict-token protocol: case-insensitive, first match, no token = no act."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_sabot.core.verdict_token import parse_verdict, rejection_text


def test_S5_verdict_token_reject_with_reason() -> None:
    token = parse_verdict("Looks off.\nVERDICT: REJECT - total uses 47.1 not 74.1")
    assert token is not None
    assert token.verdict == "reject"
    assert token.reason == "total uses 47.1 not 74.1"


def test_S5_verdict_token_approve_has_no_reason() -> None:
    token = parse_verdict("All good.\nVERDICT: APPROVE")
    assert token is not None and token.verdict == "approve" and token.reason is None


def test_S5_verdict_token_is_case_insensitive() -> None:
    token = parse_verdict("verdict:reject-wrong id")
    assert token is not None and token.verdict == "reject" and token.reason == "wrong id"


def test_S5_verdict_token_first_match_wins() -> None:
    token = parse_verdict("VERDICT: APPROVE\nlater: VERDICT: REJECT - too late")
    assert token is not None and token.verdict == "approve"


def test_S5_verdict_token_reason_stops_at_end_of_line() -> None:
    token = parse_verdict("VERDICT: REJECT - first line\nsecond line")
    assert token is not None and token.reason == "first line"


def test_S5_no_token_is_no_act() -> None:
    assert parse_verdict("This data looks off, I would reject it.") is None
    assert parse_verdict("VERDICT: MAYBE") is None
    assert parse_verdict("") is None


_reason = st.text(
    alphabet=st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)),
    min_size=1,
).map(str.strip).filter(bool)


@given(st.text())
def test_S5_verdict_parse_never_raises(text: str) -> None:
    token = parse_verdict(text)
    assert token is None or token.verdict in ("approve", "reject")


@given(_reason, st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
def test_S5_verdict_reject_line_always_parses_as_reject_with_reason(
    reason: str, before: str
) -> None:
    if ":" in before:
        before = ""
    token = parse_verdict(f"{before}\nVERDICT: REJECT - {reason}")
    assert token is not None
    assert token.verdict == "reject"
    assert token.reason == reason


@given(st.sampled_from(["VERDICT", "verdict", "Verdict", "vErDiCt"]),
       st.sampled_from(["APPROVE", "approve", "Approve"]))
def test_S5_verdict_approve_any_case(word: str, approve: str) -> None:
    token = parse_verdict(f"{word}: {approve}")
    assert token is not None and token.verdict == "approve"


@pytest.mark.parametrize("line", [
    "VERDICT: REJECT - 47.1 is wrong",
    "VERDICT: REJECT — 47.1 is wrong",
    "VERDICT: REJECT: 47.1 is wrong",
    "VERDICT: REJECT\n47.1 is wrong",
])
def test_S5_6_the_rejection_text_is_the_reply_whatever_the_layout(line: str) -> None:
    """Issue 22 item 5: what a revise pass carries does not depend on the verdict line's
    dash or layout; the reason the scorer reads is the parse rule's, a reason only after
    an ASCII hyphen."""
    reply = f"  The draft says 47.1.\nFLAGS: 47.1 vs 74.1\n{line}\n"
    assert rejection_text(reply) == reply.strip()
    token = parse_verdict(reply)
    assert token is not None and token.verdict == "reject"
    assert token.reason == ("47.1 is wrong" if " - " in line else None)
