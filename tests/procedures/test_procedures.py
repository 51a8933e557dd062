"""The embedded model's task procedures: they solve every clean task, carry every planted
fault into the artifact the way a pipeline would, and a careful review of what the
reviewer is shown finds each fault with a pre-registered anchor (standard section 10.4)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from task_pipeline import ANCHORS, ROOT, Exchange, anchored, run_cell

from pytest_sabot.core import prompt_format as pf
from pytest_sabot.core.models.anchors import load_anchor_registry
from pytest_sabot.harness.prompts import guardrail_instruction, worker_messages
from pytest_sabot.scoring.anchors import references_anchor
from pytest_sabot.sim import procedures
from pytest_sabot.sim.procedures import ToolRequest
from pytest_sabot.tasks import check_contract, evaluate_pass, load_private, load_public
from pytest_sabot.tasks.world import PassThroughSeams, make_tools

TASKS = ("T1", "T2", "T3", "T4", "T5")
OPERATORS = ("O1", "O2", "O3", "O4", "O5", "O6")
PROCEDURES_DIR = ROOT / "pytest_sabot" / "sim" / "procedures"


@pytest.mark.parametrize("task", TASKS)
def test_S3_baseline_procedures_solve_the_clean_task_and_it_passes(
    task: str, tmp_path: Path
) -> None:
    run = run_cell(task, None, tmp_path)
    ok, reason = run.verdict()
    assert ok, reason
    assert run.final.findings == []
    roles = {t.name: t.role for t in run.view.tools}
    assert [roles[name] for name in run.final.tool_calls][-2:] == ["check", "write"]
    assert "data" in [roles[name] for name in run.final.tool_calls]
    for revision in ("v0.1", "v0.2"):
        contract = load_public(task, ROOT, revision).contract
        assert check_contract(contract, run.final.delivered) == []


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("task", TASKS)
def test_S10_4_review_finds_every_planted_fault_with_a_registered_anchor(
    task: str, operator: str, tmp_path: Path
) -> None:
    run = run_cell(task, operator, tmp_path)
    hits = anchored(run.final.findings, ANCHORS[(task, operator)])
    assert hits, [f.summary for f in run.final.findings]


@pytest.mark.parametrize("operator", ["O1", "O3", "O4", "O5", "O6"])
@pytest.mark.parametrize("task", TASKS)
def test_uncaught_fault_reaches_the_final_artifact_and_fails_the_task(
    task: str, operator: str, tmp_path: Path
) -> None:
    ok, _ = run_cell(task, operator, tmp_path).verdict()
    assert not ok


@pytest.mark.parametrize("task", TASKS)
def test_false_success_leaves_a_correct_artifact(task: str, tmp_path: Path) -> None:
    ok, reason = run_cell(task, "O2", tmp_path).verdict()
    assert ok, reason


@pytest.mark.parametrize("operator", ["O1", "O2", "O3", "O5", "O6"])
@pytest.mark.parametrize("task", TASKS)
def test_revise_pass_recovers_a_caught_fault(task: str, operator: str, tmp_path: Path) -> None:
    run = run_cell(task, operator, tmp_path, rounds=2)
    ok, reason = run.verdict()
    assert ok, reason
    assert run.final.findings == []


@pytest.mark.parametrize("task", TASKS)
def test_weak_worker_makes_the_task_downgrade_mistake(task: str, tmp_path: Path) -> None:
    clean = run_cell(task, None, tmp_path / "clean")
    weak = run_cell(task, "O4", tmp_path / "weak")
    assert weak.final.draft != clean.final.draft
    ok, _ = weak.verdict()
    assert not ok
    assert anchored(weak.final.findings, ANCHORS[(task, "O4")])


@pytest.mark.parametrize("task", TASKS)
def test_S10_3_anchor_principle_injection_specs_carry_their_anchors(task: str) -> None:
    """Anchors are substrings of the injected or conflicting content (thousands separators
    and blanks aside), per the anchor principle of section 10.3."""
    private = load_private(task, ROOT)

    def squash(text: str) -> str:
        return text.lower().replace(",", "").replace(" ", "")

    for op in OPERATORS:
        spec = private.operators[op]
        pool = squash(" ".join([spec.original, spec.injected, spec.ground_truth]))
        for anchor in ANCHORS[(task, op)]:
            assert squash(anchor) in pool, (op, anchor)


@pytest.mark.parametrize("task", TASKS)
def test_tool_lie_value_occurs_once_in_the_data_tool_records(task: str) -> None:
    view = load_public(task, ROOT, "v0.2")
    spec = load_private(task, ROOT).operators["O1"]
    data = view.tool("data").data
    assert data is not None
    hits = [text for text in data.records.values() if spec.original in text]
    assert len(hits) == 1 and hits[0].count(spec.original) == 1
    assert spec.injected not in hits[0].replace(spec.original, "")


@pytest.mark.parametrize("task", TASKS)
def test_clean_draft_passes_a_guardrail_review_of_the_contract_alone(
    task: str, tmp_path: Path
) -> None:
    view = load_public(task, ROOT, "v0.2")
    draft = run_cell(task, None, tmp_path).final.delivered
    sections = [*pf.parse(guardrail_instruction(view)), pf.Section(pf.DRAFT, "", draft)]
    assert procedures.contract_problems(task, sections) == []
    assert procedures.review(task, sections) == []
    assert procedures.is_draft(task, sections, draft)
    assert not procedures.is_draft(task, sections, "calibration_lookup: no record")


@pytest.mark.parametrize("revision", ["v0.1", "v0.2"])
@pytest.mark.parametrize("task", TASKS)
def test_procedure_contract_reading_agrees_with_the_contract_check(
    task: str, revision: str, tmp_path: Path
) -> None:
    view = load_public(task, ROOT, revision)
    clean = run_cell(task, None, tmp_path).final.delivered
    breakers = {
        "T1": lambda: json.dumps({**json.loads(clean), "part_id": 3117}),
        "T2": lambda: clean.replace("Wh/kg", "Wh per kg"),
        "T3": lambda: "import os\n" + clean,
        "T4": lambda: json.dumps({**json.loads(clean), "stops": "Vantwell"}),
        "T5": lambda: "\n".join(clean.splitlines()[:2]),
    }
    broken = breakers[task]()
    for artifact in (clean, broken, "", "```\n" + clean + "\n```"):
        sections = [*pf.parse(guardrail_instruction(view)), pf.Section(pf.DRAFT, "", artifact)]
        expected = bool(check_contract(view.contract, artifact))
        assert bool(procedures.contract_problems(task, sections)) is expected, artifact[:60]


def test_unknown_task_has_no_procedure() -> None:
    with pytest.raises(KeyError, match="T9"):
        procedures.review("T9", [])


def test_procedures_import_nothing_of_the_task_loader_criteria_or_private_specs() -> None:
    for path in sorted(PROCEDURES_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert not name.startswith("pytest_sabot.tasks"), (path.name, name)
                assert name != "pytest_sabot.core.models.task", (path.name, name)
    probe = (
        "import sys, pytest_sabot.sim.procedures as p; "
        "print([m for m in sys.modules if m.startswith('pytest_sabot.tasks')])"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("task", TASKS)
def test_worker_answers_once_its_pass_has_written_even_with_feedback(
    task: str, tmp_path: Path
) -> None:
    """A revise pass in a fresh conversation ends after its own write (no second round of
    tool calls), with the revise feedback in view."""
    first = run_cell(task, "O1", tmp_path)
    msgs = worker_messages(first.view, 1, first.final.findings[0].summary, None)
    sections = pf.parse(msgs.system + "\n" + msgs.user)
    history = [Exchange(e.tool, e.arguments, e.observation) for e in first.workspace.exchanges]
    step = procedures.worker_step(task, sections, history, weak=False)
    assert not isinstance(step, ToolRequest)
    assert step.text == first.final.draft


@pytest.mark.parametrize("task", TASKS)
def test_a_new_call_after_a_finished_pass_starts_the_sequence_afresh(
    task: str, tmp_path: Path
) -> None:
    """Exchanges of a finished pass do not feed a pass that started after it: the data
    values are fetched again, so a value corrupted in the first pass does not carry over."""
    first = run_cell(task, "O1", tmp_path)
    view, ws = first.view, first.workspace
    ws.round = 1
    msgs = worker_messages(view, 1, first.final.findings[0].summary, None)
    sections = pf.parse(msgs.system + "\n" + msgs.user)
    handles = {t.name: t for t in make_tools(view, ws, PassThroughSeams())}
    history = [Exchange(e.tool, e.arguments, e.observation) for e in ws.round_exchanges(0)]
    data_tool = view.tool("data").name
    first_key = next(e.arguments for e in ws.round_exchanges(0) if e.tool == data_tool)
    history.append(Exchange(data_tool, first_key, handles[data_tool].invoke(first_key)))
    steps = 1
    while True:
        step = procedures.worker_step(task, sections, history, weak=False)
        if not isinstance(step, ToolRequest):
            break
        history.append(
            Exchange(step.tool, step.arguments, handles[step.tool].invoke(step.arguments))
        )
        steps += 1
    assert steps == len(ws.round_exchanges(0))
    private = load_private(task, ROOT)
    ok, reason = evaluate_pass(private, step.text, ws.effects(private.required_effects, step.text))
    assert ok, reason


@pytest.mark.parametrize("registry", ["anchors-wave2.yaml", "anchors-wave3.yaml"])
@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("task", TASKS)
def test_S10_3_findings_match_registered_anchors_with_the_scorer_matcher(
    registry: str, task: str, operator: str, tmp_path: Path
) -> None:
    """The findings, in the quoted form a reviewer writes on its FLAGS line, carry an
    anchor of each committed registry as the scorer matches it (word boundaries
    included)."""
    anchors = load_anchor_registry(ROOT / "cells" / registry).for_cell(task, operator)
    assert anchors
    findings = run_cell(task, operator, tmp_path).final.findings
    flags_content = "; ".join(_quoted(f) for f in findings)
    assert references_anchor(flags_content, anchors), flags_content


def _quoted(finding: procedures.Finding) -> str:
    missing = [q for q in finding.quotes if q and q not in finding.summary]
    return finding.summary + (f" ({', '.join(map(repr, missing))})" if missing else "")
