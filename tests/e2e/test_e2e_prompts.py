"""I8 and S4.3: the pipeline sees only the public view. Whatever a framework sends to its
model (system and user prompts, tool results, replies fed back, tool schemas) is read
from the request bodies the gateway received, and none of it may carry

- a ground-truth note of any operator of the task (whole or any sentence of it),
- a pass-criterion expected value that the public materials do not already contain,
  unless a model reply of the run produced it first (a value the pipeline derived itself,
  such as a route total it added up, is its own work, not a leak),
- text of a superseded material revision, except in the O5 run that plants exactly it.

One cell per operator and task (the same cells the landing tests run) plus every task's
baseline are checked. The one exception is the defect the standard disclosed for the
published waves (SPEC I86): wave 1's T3 requests carry the task file's ground-truth section,
and every note of it is checked to be there; wave 3's T3 requests carry none of it."""

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
from pytest_sabot.matrix.defects import serves_ground_truth
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
    served = serves_ground_truth(std.root, std.wave.wave, task)
    for op_id, spec in sorted(private.operators.items()):
        if served:
            continue  # the disclosed defect, reproduced: checked by served_notes_missing
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


def served_notes_missing(std: Standard, task: str, exchanges: list[dict[str, Any]]) -> list[str]:
    """The operators whose ground-truth note no request of the run carries."""
    text = squash("\n".join(s for x in exchanges for s in strings_in(x["request"])))
    return [op_id for op_id, spec in sorted(std.private(task).operators.items())
            if squash(spec.ground_truth) not in text]


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
    materials = rec.trace.start.materials
    if serves_ground_truth(wave1.root, 1, task):
        # I86: wave 1 reproduces the published T3 instrument, section and all.
        assert served_notes_missing(wave1, task, rec.exchanges) == [], rec.cell.id
        assert materials[-1] == "ground_truth.md", materials
    else:
        assert materials and "ground_truth.md" not in materials, materials


@pytest.mark.parametrize("operator", [None, "O1", "O5"])
def test_I86_wave_3_t3_prompts_carry_no_ground_truth(
    bank3: CellBank, operator: str | None
) -> None:
    """Wave 3 serves the redacted T3 material: no note reaches any request."""
    framework, config = OPERATOR_ROW[operator or "O1"]
    require_adapter(framework)
    std = bank3.std
    assert not serves_ground_truth(std.root, 3, "T3")
    rec = bank3.run(cell_id(framework, config, operator, "T3", SEED))
    assert rec.requests, f"{rec.cell.id}: the gateway received no request"
    found = leaks(rec.exchanges, forbidden(std, "T3", operator))
    assert not any("ground-truth note" in f for f in found), found
    assert not found, found
    assert served_notes_missing(std, "T3", rec.exchanges) == sorted(std.private("T3").operators)
    assert rec.trace.start.materials == ["tariff_sheet.md"]


@pytest.mark.parametrize("task", TASKS)
def test_I8_the_prompt_check_finds_private_text_when_it_is_there(
    wave1: Standard, bank3: CellBank, task: str
) -> None:
    """The check is not vacuous: a request carrying a ground-truth note and a superseded
    revision is reported, in a run that is not O5 (for T3, by wave 3's checks: wave 1
    serves T3's notes as the disclosed defect, I86)."""
    std = bank3.std if serves_ground_truth(wave1.root, 1, task) else wave1
    private = std.private(task)
    planted = "\n".join([private.operators["O1"].ground_truth, *private.stale_materials.values()])
    request = {"messages": [{"role": "user", "content": planted}]}
    found = leaks([{"request": request, "response": None}], forbidden(std, task, None))
    assert any("O1 ground-truth note" in f for f in found), found
    assert any(" stale " in f for f in found), found
