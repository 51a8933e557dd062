"""A run's trace as a pipeline writes it (core/context.py, docs/TRACE.md): the pipeline
records its own surfaces; the harness's kinds are the harness's, never the pipeline's."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_sabot.core.models.trace import ADAPTER_EVENT_KINDS, HARNESS_EVENT_KINDS
from pytest_sabot.harness.run import RunTrace


@pytest.mark.parametrize("kind", HARNESS_EVENT_KINDS)
def test_a_pipeline_cannot_write_an_event_of_the_harness(tmp_path: Path, kind: str) -> None:
    """An injection, a probe or a model call a pipeline wrote would be evidence it made
    itself: refused before anything is written, naming what it may record instead."""
    trace = RunTrace(tmp_path)
    with pytest.raises(ValueError) as refused:
        trace.emit(kind, "worker", "forged", operator="O1", landed=True)
    said = str(refused.value)
    assert f"the harness writes {kind} events itself" in said
    assert "review, guardrail" in said
    assert trace.events() == []


def test_an_unknown_kind_names_only_what_a_pipeline_records(tmp_path: Path) -> None:
    trace = RunTrace(tmp_path)
    with pytest.raises(ValueError) as refused:
        trace.emit("reviewed", "checker", "VERDICT: PASS")
    said = str(refused.value)
    assert "ctx.trace.emit('reviewed'): no such event kind" in said
    listed = said.split("records one of: ")[1].split(", ")
    assert listed == list(ADAPTER_EVENT_KINDS)
    assert not set(listed) & set(HARNESS_EVENT_KINDS)


def test_the_pipelines_own_kinds_and_the_harnesss_record_are_written(tmp_path: Path) -> None:
    trace = RunTrace(tmp_path)
    trace.record("message", "worker", "draft", sender="worker", receiver="reviewer",
                 channel="worker->reviewer")
    trace.emit("review", "reviewer", "VERDICT: PASS", round=0)
    assert [e.kind for e in trace.events()] == ["message", "review"]
