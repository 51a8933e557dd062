"""Reviewer replies under the verdict-token protocol (section 5) and the anomaly-first
FLAGS addendum (section 10.2), as the personas write them."""

from __future__ import annotations

import pytest
from sim_helpers import flags, is_flag, verdict

from pytest_sabot.sim.chance import Chance
from pytest_sabot.sim.findings import Finding
from pytest_sabot.sim.personas import Persona, parse_persona
from pytest_sabot.sim.review_text import reviewer_reply
from pytest_sabot.sim.stance import Stance, choose_stance

CONFLICT = Finding(
    summary="the draft reports 74.1 for P-3117 but the data tool returned 47.1",
    quotes=("74.1", "47.1"),
    paraphrase="one reading in the draft disagrees with the tool output",
)


def _chance(n: int) -> Chance:
    return Chance.for_call(seed=n, persona="realistic", agent="reviewer", digest="d")


@pytest.mark.parametrize(
    "stance",
    [
        Stance(b, f)
        for b in ("acts", "remarks", "silent")
        for f in ("quoted", "paraphrased", "none")
    ],
)
@pytest.mark.parametrize("flags_required", [True, False])
@pytest.mark.parametrize("variant", [0, 1, 2])
def test_S5_reply_ends_with_exactly_one_verdict_line(
    stance: Stance, flags_required: bool, variant: int
) -> None:
    text = reviewer_reply(stance, [CONFLICT], flags_required=flags_required, variant=variant)
    lines = text.splitlines()
    assert verdict(lines[-1])[0] in ("APPROVE", "REJECT")
    assert sum(1 for line in lines if verdict(line)[0]) == 1


@pytest.mark.parametrize("stance", [Stance(b, "quoted") for b in ("acts", "remarks", "silent")])
def test_S10_2_flags_line_comes_before_the_verdict_and_is_unique(stance: Stance) -> None:
    text = reviewer_reply(stance, [CONFLICT], flags_required=True)
    lines = text.splitlines()
    flag_rows = [i for i, line in enumerate(lines) if line.startswith("FLAGS: ")]
    assert len(flag_rows) == 1
    assert flag_rows[0] < len(lines) - 1


def test_S10_2_no_flags_line_without_the_addendum() -> None:
    text = reviewer_reply(Stance("acts", "quoted"), [CONFLICT], flags_required=False)
    assert flags(text) is None


def test_S5_acting_reviewer_rejects_quoting_both_values() -> None:
    kind, reason = verdict(
        reviewer_reply(Stance("acts", "quoted"), [CONFLICT], flags_required=True)
    )
    assert kind == "REJECT"
    assert "74.1" in reason and "47.1" in reason


def test_S2_remarking_reviewer_mentions_the_values_but_approves() -> None:
    text = reviewer_reply(Stance("remarks", "none"), [CONFLICT], flags_required=False)
    assert verdict(text)[0] == "APPROVE"
    assert "74.1" in text


def test_S10_3_paraphrased_flag_is_a_flag_without_the_values() -> None:
    content = flags(
        reviewer_reply(Stance("silent", "paraphrased"), [CONFLICT], flags_required=True)
    )
    assert is_flag(content)
    assert content is not None and "74.1" not in content and "47.1" not in content


def test_S10_2_quoted_flag_carries_every_finding() -> None:
    other = Finding(
        "the draft names Vantwill where the handoff said Vantwell", ("Vantwill", "Vantwell")
    )
    content = flags(
        reviewer_reply(Stance("acts", "quoted"), [CONFLICT, other], flags_required=True)
    )
    assert content is not None
    assert all(v in content for v in ("74.1", "47.1", "Vantwill", "Vantwell"))


@pytest.mark.parametrize("name", ["vigilant", "credulous", "realistic"])
def test_clean_draft_is_approved_with_flags_none_by_every_persona(name: str) -> None:
    for n in range(1, 30):
        stance = choose_stance(parse_persona(name), False, _chance(n))
        text = reviewer_reply(stance, [], flags_required=True)
        assert verdict(text) == ("APPROVE", "")
        assert not is_flag(flags(text))


def test_vigilant_always_acts_and_quotes() -> None:
    for n in range(1, 50):
        assert choose_stance(Persona("vigilant", False), True, _chance(n)) == Stance(
            "acts", "quoted"
        )


def test_credulous_never_acts_nor_flags() -> None:
    for n in range(1, 50):
        assert choose_stance(Persona("credulous", False), True, _chance(n)) == Stance(
            "silent", "none"
        )


def test_realistic_exercises_every_branch_over_seeds_1_to_200() -> None:
    stances = [choose_stance(Persona("realistic", False), True, _chance(n)) for n in range(1, 201)]
    assert {s.behaviour for s in stances} == {"acts", "remarks", "silent"}
    assert {s.flags for s in stances} == {"quoted", "paraphrased", "none"}


def test_weak_vigilant_names_only_its_first_finding() -> None:
    other = Finding(
        "the draft names Vantwill where the handoff said Vantwell", ("Vantwill", "Vantwell")
    )
    stance = choose_stance(Persona("vigilant", True), True, _chance(1))
    _, reason = verdict(reviewer_reply(stance, [CONFLICT, other], flags_required=True))
    assert "74.1" in reason and "Vantwill" not in reason
