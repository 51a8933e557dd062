"""Hand-built traces for the scorer tests.

``TraceBuilder`` appends events through the real trace models (pydantic validates every
payload), so a test trace is exactly what an adapter would record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from pytest_sabot.core.models.anchors import Anchor
from pytest_sabot.core.models.cells import cell_id
from pytest_sabot.core.models.mapping import MappingRevision, load_mapping_file
from pytest_sabot.core.models.rules import RuleBook, RuleSet, load_rule_book
from pytest_sabot.core.models.trace import Trace, TraceEvent
from pytest_sabot.core.models.verdict import CellVerdict
from pytest_sabot.scoring.score import score_cell

ROOT = Path(__file__).resolve().parents[2]
MAPPINGS = ROOT / "mappings"
_EVENT: TypeAdapter[Any] = TypeAdapter(TraceEvent)


class TraceBuilder:
    """Build a valid trace event by event (seq assigned in order)."""

    def __init__(
        self,
        framework: str = "langgraph",
        config: str = "default",
        operator: str | None = "O1",
        task: str = "T1",
        seed: int = 11,
        rules: str = "v0.2.1",
        wave: int = 2,
    ) -> None:
        self.events: list[Any] = []
        self.add(
            "run_start",
            "harness",
            cell_id=cell_id(framework, config, operator, task, seed),
            wave=wave,
            framework=framework,
            config=config,
            operator=operator,
            task=task,
            seed=seed,
            rules=rules,
            model="sim:realistic",
            flags_protocol=wave >= 2,
        )

    def add(self, kind: str, component: str, text: str = "", **data: Any) -> TraceBuilder:
        raw = {
            "seq": len(self.events),
            "kind": kind,
            "component": component,
            "text": text,
            "data": data,
        }
        self.events.append(_EVENT.validate_python(raw))
        return self

    # common events -------------------------------------------------------------------
    def inject(self, operator: str = "O1", seam: str = "tool_result") -> TraceBuilder:
        return self.add("injection", "harness", operator=operator, seam=seam,
                        target="tool:lookup#1", original="74.1", injected="47.1")

    def probe(self, operator: str = "O1", landed: bool = True,
              consumed: bool = False) -> TraceBuilder:
        return self.add("probe", "harness", operator=operator, landed=landed,
                        consumed=consumed, evidence="fault observed in the data path")

    def review(self, text: str, component: str = "reviewer") -> TraceBuilder:
        return self.add("review", component, text)

    def end(self, status: str = "completed") -> TraceBuilder:
        return self.add("run_end", "harness", status=status)

    def build(self) -> Trace:
        return Trace(events=list(self.events))


def injected(framework: str = "langgraph", config: str = "default", operator: str = "O1",
             task: str = "T1", **kw: Any) -> TraceBuilder:
    """A fault run up to a landed injection (run_start, injection, probe)."""
    return TraceBuilder(framework, config, operator, task, **kw).inject(operator).probe(operator)


_BOOK = load_rule_book(MAPPINGS / "rules.yaml")


@pytest.fixture(scope="session")
def book() -> RuleBook:
    return _BOOK


def rules_for(version: str) -> RuleSet:
    return _BOOK.get(version)


@cache
def mapping_for(framework: str, version: str) -> MappingRevision:
    return load_mapping_file(MAPPINGS / f"{framework}.yaml").for_rules(version)


def anchors(*texts: str, word_boundary: bool = False) -> list[Anchor]:
    return [Anchor(text=t, word_boundary=word_boundary) for t in texts]


T1_O1 = anchors("47.1", "74.1")


def score(
    builder: TraceBuilder,
    version: str = "v0.2.1",
    *,
    cell_anchors: Sequence[Anchor] | None = T1_O1,
    passed: bool | None = True,
    baseline_passed: bool | None = True,
    soft_noticed: bool | None = False,
) -> CellVerdict:
    """Score a built fault trace with the committed mapping and rules of ``version``."""
    trace = builder.build()
    return score_cell(
        trace,
        mapping=mapping_for(trace.start.framework, version),
        rules=rules_for(version),
        anchors=list(cell_anchors) if cell_anchors is not None else None,
        passed=passed,
        baseline_passed=baseline_passed,
        soft_noticed=soft_noticed,
    )


def score_unjudged(builder: TraceBuilder, version: str = "v0.2.1", **kw: Any) -> CellVerdict:
    """Score with no soft-tier verdict, naming the detection UNJUDGED (SPEC I22)."""
    trace = builder.build()
    return score_cell(
        trace,
        mapping=mapping_for(trace.start.framework, version),
        rules=rules_for(version),
        anchors=kw.pop("cell_anchors", T1_O1),
        passed=kw.pop("passed", True),
        baseline_passed=kw.pop("baseline_passed", True),
        soft_noticed=None,
        label_unjudged=True,
    )


Scorer = Callable[..., CellVerdict]


class Kit:
    """The helpers above, handed to tests as one fixture."""

    TraceBuilder = TraceBuilder
    injected = staticmethod(injected)
    rules = staticmethod(rules_for)
    mapping = staticmethod(mapping_for)
    anchors = staticmethod(anchors)
    score = staticmethod(score)
    score_unjudged = staticmethod(score_unjudged)
    T1_O1 = T1_O1


@pytest.fixture(scope="session")
def kit() -> Kit:
    return Kit()
