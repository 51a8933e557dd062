"""One list of event kinds and one reading of where the fault was planted (issue 11): the
judge's transcript and the scorer can never disagree on either."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from pydantic import ValidationError

from pytest_sabot.core.models.mapping import Matcher
from pytest_sabot.core.models.trace import (
    ACT_SURFACE_KINDS,
    EVENT_KINDS,
    RECORD_ONLY_KINDS,
    TraceEvent,
    injection_seq,
)
from pytest_sabot.judge.transcript import FAULT_MARK, after_fault, render
from pytest_sabot.scoring import score as scoring


def _kinds_of_the_event_models() -> list[str]:
    union = typing.get_args(typing.get_args(TraceEvent)[0])
    return [typing.get_args(model.model_fields["kind"].annotation)[0] for model in union]


def test_the_event_models_carry_exactly_the_one_list_of_kinds() -> None:
    assert _kinds_of_the_event_models() == list(EVENT_KINDS)
    assert set(ACT_SURFACE_KINDS) | set(RECORD_ONLY_KINDS) == set(EVENT_KINDS)


@pytest.mark.parametrize("kind", RECORD_ONLY_KINDS)
def test_S8_12_a_mapping_row_never_reads_an_act_from_a_record_only_kind(kind: str) -> None:
    with pytest.raises(ValidationError, match="Input should be 'run_start'"):
        Matcher(event=kind)


@pytest.mark.parametrize("kind", ACT_SURFACE_KINDS)
def test_every_other_kind_may_carry_a_mapping_row(kind: str) -> None:
    assert Matcher(event=kind).event == kind


def test_I17_the_judge_marks_the_fault_where_the_scorer_counts_from(kit: Any) -> None:
    """An operator that recorded no injection event is planted at its landed probe, for the
    scorer and for the judge alike: a remark before it is not a notice of the fault."""
    trace = (
        kit.TraceBuilder(operator="O1")
        .review("The figures look odd to me.\nVERDICT: APPROVE")
        .probe("O1")
        .review("Bench value 47.1 contradicts the sheet.\nVERDICT: REJECT - wrong value")
        .end()
        .build()
    )
    planted = injection_seq(trace)
    assert planted == 2
    assert scoring.injection_seq is injection_seq
    text = render(trace)
    assert FAULT_MARK in text
    noticed = after_fault(text)
    assert "contradicts the sheet" in noticed
    assert "look odd" not in noticed
