"""I8 and S4.3: the pipeline sees only the public view. Whatever a framework sends to its
model (system and user prompts, tool results, replies fed back, tool schemas) is read
from the request bodies the gateway received, and none of it may carry

- a ground-truth note of any operator of the task (whole or any sentence of it),
- a pass-criterion expected value that the public materials do not already contain,
- text of a superseded material revision, except in the O5 run that plants exactly it.

One cell per operator and task (the same cells the landing tests run) plus every task's
baseline are checked."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e_bank import SEED, CellBank, Recorded, require_adapter
from test_e2e_landing import OPERATOR_ROW

from pytest_sabot.models.cells import OPERATORS, TASKS, cell_id
from pytest_sabot.standard import Standard
from pytest_sabot.tasks import load_public

EXPECTED_KEYS = frozenset({"expected", "required", "answer_required", "quote", "function"})
MIN_SENTENCE = 30
MIN_STALE_LINE = 12


def squash(text: str) -> str:
    return " ".join(text.split())


def strings_in(value: Any) -> Iterator[str]:
    """Every string leaf of a JSON-like value (keys included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def expected_values(check: Any) -> Iterator[Any]:
    """Values under the criterion's expected/required keys, at any depth."""
    if isinstance(check, dict):
        for key, item in check.items():
            if key in EXPECTED_KEYS:
                yield from leaves(item)
            else:
                yield from expected_values(item)
    elif isinstance(check, list):
        for item in check:
            yield from expected_values(item)


def value_pattern(value: Any) -> re.Pattern[str] | None:
    """How an expected value would show in text: numbers word-bounded, strings as is."""
    if isinstance(value, bool) or value is None or value == "ValueError":
        return None
    if isinstance(value, int | float):
        forms = {repr(value), f"{value:g}"}
        alternatives = "|".join(re.escape(f) for f in sorted(forms))
        return re.compile(rf"(?<![\w.])(?:{alternatives})(?![\w]|\.\d)")
    text = str(value)
    return re.compile(re.escape(text)) if text.strip() else None


def public_text(std: Standard, task: str) -> str:
    view = load_public(task, std.root, std.wave.contract_revision)
    parts = [view.title, view.brief, view.artifact, view.contract.model_dump_json()]
    parts += [f"{m.name} {m.revision}\n{m.text}" for m in view.materials]
    parts += [tool.model_dump_json() for tool in view.tools]
    return "\n".join(parts)


def sentences(note: str) -> list[str]:
    text = squash(note)
    pieces = [p.strip() for p in re.split(r"(?<=[.;:])\s+", text)]
    return [text, *(p for p in pieces if len(p) >= MIN_SENTENCE)]


def sent_text(rec: Recorded) -> str:
    return "\n".join(s for body in rec.requests for s in strings_in(body))


def forbidden(std: Standard, task: str, operator: str | None) -> list[tuple[str, re.Pattern[str]]]:
    """(what, pattern) pairs that must match no request of a cell of this task."""
    private = std.private(task)
    public = public_text(std, task)
    squashed_public = squash(public)
    out: list[tuple[str, re.Pattern[str]]] = []
    for op_id, spec in sorted(private.operators.items()):
        for sentence in sentences(spec.ground_truth):
            if sentence not in squashed_public:
                out.append((f"{op_id} ground-truth note", re.compile(re.escape(sentence))))
    criterion = yaml.safe_load(
        (Path(std.root) / "tasks" / task / "private" / "criterion.yaml").read_text("utf-8")
    )
    for value in expected_values(criterion["check"]):
        pattern = value_pattern(value)
        if pattern is not None and not pattern.search(public):
            out.append((f"expected value {value!r}", pattern))
    planted = private.operators["O5"].target if operator == "O5" else None
    for material, stale in sorted(private.stale_materials.items()):
        if material == planted:
            continue
        for line in stale.splitlines():
            line = squash(line)
            if len(line) >= MIN_STALE_LINE and line not in squashed_public:
                out.append((f"stale {material} line", re.compile(re.escape(line))))
    return out


def cells_to_check() -> list[Any]:
    params = [
        pytest.param(operator, task, id=f"{operator}-{task}")
        for operator in OPERATORS
        for task in TASKS
    ]
    params += [pytest.param(None, task, id=f"baseline-{task}") for task in TASKS]
    return params


@pytest.mark.parametrize(("operator", "task"), cells_to_check())
def test_I8_no_ground_truth_reaches_any_prompt(
    bank: CellBank, wave1: Standard, operator: str | None, task: str
) -> None:
    framework, config = OPERATOR_ROW[operator or OPERATORS[TASKS.index(task)]]
    require_adapter(framework)
    rec = bank.run(cell_id(framework, config, operator, task, SEED))
    assert rec.requests, f"{rec.cell.id}: the gateway received no request"
    raw = sent_text(rec)
    text = squash(raw)
    checks = forbidden(wave1, task, operator)
    assert checks, f"{task}: nothing private to look for"
    leaks = [what for what, pattern in checks if pattern.search(text) or pattern.search(raw)]
    assert not leaks, f"{rec.cell.id}: private text in requests: {leaks}"
