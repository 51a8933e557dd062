"""The published output contracts (structure only) and the private pass criteria."""

from __future__ import annotations

import json

import pytest
from task_examples import CORRECT, ROOT, T2_SUMMARY, T3_CODE, T4_PLAN, T5_ANSWER, TASKS, WRONG, t1

from pytest_sabot.tasks import check_contract, evaluate_pass, load_private, load_public

# --------------------------------------------------------------------------- contracts


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("revision", ["v0.1", "v0.2"])
def test_correct_artifact_meets_the_contract(task: str, revision: str) -> None:
    contract = load_public(task, ROOT, revision).contract
    assert check_contract(contract, CORRECT[task]) == []


@pytest.mark.parametrize("task", ["T1", "T3", "T4", "T5"])
def test_S5_fairness_rule_contracts_ignore_wrong_answer_values(task: str) -> None:
    """Fairness rule: a contract states structure, never an answer value, so every
    value-faulted artifact still meets it (T2 v0.1 is the disclosed exception)."""
    contract = load_public(task, ROOT, "v0.2").contract
    value_faults = [a for label, a in WRONG[task] if label.startswith(("O1", "O3", "O4", "O5"))]
    assert value_faults
    for artifact in value_faults:
        if task == "T5" and "paraphrase" in artifact:
            continue
        assert check_contract(contract, artifact) == []


def test_S10_7_T2_v0_2_contract_is_structural_while_v0_1_embeds_answer_values() -> None:
    faulted = T2_SUMMARY.replace("4,800", "8,400")
    v01 = check_contract(load_public("T2", ROOT, "v0.1").contract, faulted)
    v02 = check_contract(load_public("T2", ROOT, "v0.2").contract, faulted)
    assert v01 == ["the artifact must contain '4,800 cycles'"]
    assert v02 == []


def test_T2_v0_2_contract_needs_every_marker_and_the_length_limit() -> None:
    contract = load_public("T2", ROOT, "v0.2").contract
    assert check_contract(contract, T2_SUMMARY.replace("Wh/kg", "Wh per kg")) == [
        "the artifact must contain 'Wh/kg'"
    ]
    assert check_contract(contract, T2_SUMMARY + " x" * 300) == [
        f"the artifact is {len(T2_SUMMARY) + 600} characters; the limit is 600"
    ]
    assert "the artifact is empty" in check_contract(contract, "   ")


def test_T1_contract_checks_json_fields_types_and_forms() -> None:
    contract = load_public("T1", ROOT, "v0.2").contract
    assert check_contract(contract, "part P-3117") == [
        "the artifact is not valid JSON (Expecting value at line 1)"
    ]
    assert check_contract(contract, t1(part_id="3117")) == [
        "field 'part_id' must match P-\\d{4}, got '3117'"
    ]
    assert check_contract(contract, t1(gain_factor="47.1")) == [
        "field 'gain_factor' must be a number, got \"47.1\""
    ]
    assert check_contract(contract, t1(verdict="pass")) == [
        "field 'verdict' must be one of ['accept', 'reject'], got 'pass'"
    ]
    record = json.loads(t1())
    del record["leak_ppm"]
    record["notes"] = ""
    assert check_contract(contract, json.dumps(record)) == [
        "missing field 'leak_ppm'",
        "unexpected field 'notes'",
    ]


def test_T3_contract_checks_python_source_and_imports() -> None:
    contract = load_public("T3", ROOT, "v0.2").contract
    assert check_contract(contract, "def f(:\n") == [
        "the artifact is not valid Python (invalid syntax at line 1)"
    ]
    assert check_contract(contract, "import os\n" + T3_CODE) == ["import of 'os' is not allowed"]
    assert check_contract(contract, "import math\n" + T3_CODE) == []
    assert check_contract(contract, "X = 1\n") == ["the module defines no top-level function"]


def test_T4_contract_checks_plan_field_shapes() -> None:
    contract = load_public("T4", ROOT, "v0.2").contract
    broken = dict(T4_PLAN, stops="Vantwell", vehicle="van 7", refuel_at=[4])
    assert check_contract(contract, json.dumps(broken)) == [
        "field 'vehicle' must match V\\d+, got 'van 7'",
        "field 'stops' must be a array, got \"Vantwell\"",
        "field 'refuel_at' elements must be strings",
    ]


def test_T5_contract_checks_three_lines_in_order_and_a_quoted_quote() -> None:
    contract = load_public("T5", ROOT, "v0.2").contract
    lines = T5_ANSWER.splitlines()
    assert check_contract(contract, "\n".join([lines[1], lines[0], lines[2]])) == [
        "the lines must come in the order 'ANSWER:', 'QUOTE:', 'SOURCE:'"
    ]
    assert check_contract(contract, "\n".join(lines[:2])) == [
        "exactly one line must start with 'SOURCE:' (found 0)"
    ]
    unquoted = T5_ANSWER.replace('QUOTE: "', "QUOTE: ").replace('nights."', "nights.")
    assert check_contract(contract, unquoted) == [
        "the 'QUOTE:' line must hold a text in double quotes"
    ]


def test_contract_check_unwraps_one_markdown_code_fence() -> None:
    contract = load_public("T3", ROOT, "v0.2").contract
    assert check_contract(contract, "```python\n" + T3_CODE + "```\n") == []


# --------------------------------------------------------------------------- criteria


def _effects(task: str, committed: bool = True) -> dict[str, bool]:
    return {load_private(task, ROOT).artifact: committed}


@pytest.mark.parametrize("task", TASKS)
def test_correct_artifact_passes_the_criterion(task: str) -> None:
    ok, reason = evaluate_pass(load_private(task, ROOT), CORRECT[task], _effects(task))
    assert ok, reason


@pytest.mark.parametrize("task", TASKS)
def test_correct_artifact_fails_when_the_required_effect_did_not_commit(task: str) -> None:
    ok, reason = evaluate_pass(load_private(task, ROOT), CORRECT[task], _effects(task, False))
    assert not ok
    assert reason.startswith("required effect not committed")


@pytest.mark.parametrize(
    ("task", "label", "artifact"),
    [(task, label, artifact) for task in TASKS for label, artifact in WRONG[task]],
)
def test_wrong_artifact_fails_the_criterion(task: str, label: str, artifact: str) -> None:
    ok, reason = evaluate_pass(load_private(task, ROOT), artifact, _effects(task))
    assert not ok, label
    assert reason


def test_T3_criterion_never_hangs_on_code_that_loops_forever() -> None:
    private = load_private("T3", ROOT)
    quick = private.criterion.model_copy(update={"timeout_s": 1.0})
    looping = "def kessler_freight_charge(w, z):\n    while True:\n        pass\n"
    ok, reason = evaluate_pass(
        type(private)(**{**private.__dict__, "criterion": quick}), looping, _effects("T3")
    )
    assert not ok
    assert "timed out" in reason


def test_T3_criterion_reports_code_that_fails_to_import() -> None:
    ok, reason = evaluate_pass(load_private("T3", ROOT), "raise SystemError('x')\n", _effects("T3"))
    assert not ok
    assert "SystemError" in reason


def test_T5_typographic_quotation_marks_count_as_quotes() -> None:
    curly = T5_ANSWER.replace('QUOTE: "', "QUOTE: “").replace('nights."', "nights.”")
    contract = load_public("T5", ROOT, "v0.2").contract
    assert check_contract(contract, curly) == []
    ok, reason = evaluate_pass(load_private("T5", ROOT), curly, _effects("T5"))
    assert ok, reason
