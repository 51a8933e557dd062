"""I8 and S4.3: the pipeline sees only the public view. Whatever a framework sends to its
model (system and user prompts, tool results, replies fed back, tool schemas) is read
from the request bodies the gateway received, and none of it may carry

- a ground-truth note of any operator of the task (whole or any sentence of it),
- a pass-criterion expected value that the public materials do not already contain,
  unless a model reply of the run produced it first (a value the pipeline derived itself,
  such as a route total it added up, is its own work, not a leak),
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
from e2e_bank import SEED, CellBank, require_adapter
from test_e2e_landing import OPERATOR_ROW

from pytest_sabot.core.models.cells import OPERATORS, TASKS, cell_id
from pytest_sabot.matrix.standard import Standard
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


def leaks(exchanges: list[dict[str, Any]], checks: list[Check]) -> list[str]:
    """Each check matched by a request, in the order the gateway received them; a derivable
    value is excused once an earlier model reply of the run contained it."""
    found: list[str] = []
    said = ""
    for number, exchange in enumerate(exchanges):
        raw = "\n".join(strings_in(exchange["request"]))
        text = squash(raw)
        for what, pattern, derivable in checks:
            if not (pattern.search(raw) or pattern.search(text)):
                continue
            if derivable and pattern.search(said):
                continue
            found.append(f"request {number}: {what}")
        reply = exchange["response"] or {}
        said += "\n" + "\n".join(strings_in(reply.get("choices", [])))
    return found


Check = tuple[str, re.Pattern[str], bool]  # what, pattern, may a model reply produce it


def forbidden(std: Standard, task: str, operator: str | None) -> list[Check]:
    """What must not reach a request of a cell of this task."""
    private = std.private(task)
    public = public_text(std, task)
    squashed_public = squash(public)
    out: list[Check] = []
    for op_id, spec in sorted(private.operators.items()):
        for sentence in sentences(spec.ground_truth):
            if sentence not in squashed_public:
                out.append((f"{op_id} ground-truth note", re.compile(re.escape(sentence)), False))
    criterion = yaml.safe_load(
        (Path(std.root) / "tasks" / task / "private" / "criterion.yaml").read_text("utf-8")
    )
    for value in expected_values(criterion["check"]):
        pattern = value_pattern(value)
        if pattern is not None and not (pattern.search(public) or pattern.search(squashed_public)):
            out.append((f"expected value {value!r}", pattern, True))
    planted = private.operators["O5"].target if operator == "O5" else None
    for material, stale in sorted(private.stale_materials.items()):
        if material == planted:
            continue
        for line in stale.splitlines():
            line = squash(line)
            if len(line) >= MIN_STALE_LINE and line not in squashed_public:
                out.append((f"stale {material} line", re.compile(re.escape(line)), False))
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
    checks = forbidden(wave1, task, operator)
    assert checks, f"{task}: nothing private to look for"
    found = leaks(rec.exchanges, checks)
    assert not found, f"{rec.cell.id}: private text in requests: {found}"


@pytest.mark.parametrize("task", TASKS)
def test_I8_the_prompt_check_finds_private_text_when_it_is_there(
    wave1: Standard, task: str
) -> None:
    """The check is not vacuous: a request carrying a ground-truth note and a superseded
    revision is reported, in a run that is not O5."""
    private = wave1.private(task)
    planted = "\n".join([private.operators["O1"].ground_truth, *private.stale_materials.values()])
    request = {"messages": [{"role": "user", "content": planted}]}
    found = leaks([{"request": request, "response": None}], forbidden(wave1, task, None))
    assert any("O1 ground-truth note" in f for f in found), found
    assert any(" stale " in f for f in found), found
