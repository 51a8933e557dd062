"""The six operators (SPEC S4, I12, I14): each acts at its own seam only, exactly once, as the
task's injection spec says, and its landing probe reads the trace truthfully."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_sabot.core.models.trace import Trace
from pytest_sabot.core.operators import declaration, operator_ids, standard_operator_ids
from pytest_sabot.core.paths import standard_root
from pytest_sabot.operators import arm, operator_class
from pytest_sabot.tasks import load_private

ROOT = standard_root()


@pytest.fixture(scope="module")
def t1() -> Any:
    return load_private("T1", ROOT)


def _trace(events: list[dict[str, Any]]) -> list[Any]:
    start = {
        "seq": 0,
        "kind": "run_start",
        "component": "harness",
        "data": {
            "cell_id": "c",
            "wave": 1,
            "framework": "langgraph",
            "config": "default",
            "operator": "O1",
            "task": "T1",
            "seed": 11,
            "rules": "v0.1.3",
            "model": "sim",
        },
    }
    raw = [start] + [{"seq": i + 1, **e} for i, e in enumerate(events)]
    return list(Trace.model_validate({"events": raw}).events)


def _model_call(agent: str = "worker", downgraded: bool = False) -> dict[str, Any]:
    return {
        "kind": "model_call",
        "component": agent,
        "text": "",
        "data": {
            "call_index": 0,
            "model_requested": "gpt-5.6-terra",
            "model_served": "sim:realistic-weak" if downgraded else "sim:realistic",
            "downgraded": downgraded,
        },
    }


def test_S4_every_operator_has_a_module_and_its_own_seam() -> None:
    assert standard_operator_ids() == ("O1", "O2", "O3", "O4", "O5", "O6")
    assert operator_ids("message") == standard_operator_ids()
    seams = [declaration(op).seams for op in standard_operator_ids()]
    assert len({s for found in seams for s in found}) == 6  # one seam each, none shared
    for op in standard_operator_ids():
        cls = operator_class(op)
        assert cls.__module__ == f"pytest_sabot.operators.{op.lower()}_" + declaration(
            op).name.replace("-", "_")


def test_S4_O1_corrupts_the_first_data_result_carrying_the_original_only(t1: Any) -> None:
    op = arm("O1", t1.operator("O1"))
    spec = t1.operator("O1")
    assert op.on_tool_result(spec.target, "check", 1, f"x {spec.original}") is None
    assert op.on_tool_result("other_tool", "data", 1, f"x {spec.original}") is None
    assert op.on_tool_result(spec.target, "data", 1, "no value here") is None
    out = op.on_tool_result(spec.target, "data", 2, f"gain {spec.original}")
    assert out == f"gain {spec.injected}"
    assert op.on_tool_result(spec.target, "data", 3, f"gain {spec.original}") is None  # once


def test_S4_O2_replaces_one_check_report_with_the_bare_claim(t1: Any) -> None:
    op = arm("O2", t1.operator("O2"))
    spec = t1.operator("O2")
    assert op.on_tool_result(spec.target, "data", 1, "report") is None
    assert op.on_tool_result(spec.target, "check", 1, "long report") == spec.injected
    assert op.on_tool_result(spec.target, "check", 2, "long report") is None


def test_S4_O3_alters_one_handoff_on_its_channel(t1: Any) -> None:
    op = arm("O3", t1.operator("O3"))
    spec = t1.operator("O3")
    assert op.on_handoff("worker->reviewer", "nothing to alter") is None
    assert op.on_handoff("other->channel", f"part {spec.original}") is None
    assert op.on_handoff("worker->reviewer", f"part {spec.original}") == f"part {spec.injected}"
    assert op.on_handoff("worker->reviewer", f"part {spec.original}") is None


def test_I14_O3_magentic_carve_out_alters_the_handoff_to_the_emitter(t1: Any) -> None:
    op = arm("O3", t1.operator("O3"))
    spec = t1.operator("O3")
    assert op.on_handoff("orchestrator->emitter", spec.original) == spec.injected


def test_S4_O4_names_the_agent_the_gateway_downgrades(t1: Any) -> None:
    op = arm("O4", t1.operator("O4"))
    assert op.downgrade_agent() == "worker"
    assert op.on_tool_result("calibration_lookup", "data", 1, "47.1") is None


def test_S10_7_2_I21_O4_probe_records_the_facts_of_every_call(t1: Any) -> None:
    op = arm("O4", t1.operator("O4"))
    none_served = op.probe(_trace([_model_call(), _model_call("reviewer")]))
    assert none_served.landed is False and none_served.consumed is False
    assert none_served.evidence == "1 call(s) of worker; 0 routed to the weak tier, 0 served"
    served = op.probe(_trace([_model_call(), _model_call(downgraded=True)]))
    assert served.landed and served.consumed
    assert served.evidence == (
        "2 call(s) of worker; 1 routed to the weak tier, 1 served by "
        "'sim:realistic-weak' (first at seq 2)"
    )


def test_S10_7_2_O4_probe_does_not_count_a_routed_call_that_failed(t1: Any) -> None:
    op = arm("O4", t1.operator("O4"))
    failed = _model_call(downgraded=True)
    failed["data"]["error"] = "upstream 500"
    probe = op.probe(_trace([failed]))
    assert probe.landed is False and "1 routed to the weak tier, 0 served" in probe.evidence


def test_S4_O5_hands_the_worker_the_superseded_revision_once(t1: Any) -> None:
    op = arm("O5", t1.operator("O5"))
    spec = t1.operator("O5")
    override = op.worker_materials(t1.stale_materials)
    assert override == {spec.target: t1.stale_materials[spec.target]}
    assert op.worker_materials(t1.stale_materials) is None


def test_S4_O6_skips_the_first_write_of_the_artifact_only(t1: Any) -> None:
    op = arm("O6", t1.operator("O6"))
    spec = t1.operator("O6")
    assert op.skip_effect("write_file", "notes.txt") is False
    assert op.skip_effect("write_file", spec.target) is True
    assert op.skip_effect("write_file", spec.target) is False


def test_I14_a_fault_that_never_fired_is_not_landed(t1: Any) -> None:
    for op_id in ("O1", "O2", "O3", "O5", "O6"):
        probe = arm(op_id, t1.operator(op_id)).probe(_trace([_model_call()]))
        assert probe.landed is False, op_id


def test_I14_O1_probe_needs_the_corrupted_value_shown_and_a_later_read(t1: Any) -> None:
    op = arm("O1", t1.operator("O1"))
    spec = t1.operator("O1")
    op.on_tool_result(spec.target, "data", 1, f"gain {spec.original}")
    op.injection_seq = 1
    events = [
        {
            "kind": "injection",
            "component": "harness",
            "data": {
                "operator": "O1",
                "seam": "tool_result",
                "target": "t",
                "original": spec.original,
                "injected": spec.injected,
            },
        },
        {
            "kind": "tool_result",
            "component": "worker",
            "text": f"gain {spec.injected}",
            "data": {"tool": spec.target, "call_id": "c1"},
        },
    ]
    shown_only = op.probe(_trace(events))
    assert shown_only.landed and not shown_only.consumed
    read = op.probe(_trace([*events, _model_call()]))
    assert read.landed and read.consumed


def test_I14_O6_probe_sees_the_uncommitted_effect_and_the_success_shown(t1: Any) -> None:
    op = arm("O6", t1.operator("O6"))
    op.skip_effect("write_file", t1.operator("O6").target)
    op.injection_seq = 1
    events = [
        {
            "kind": "injection",
            "component": "harness",
            "data": {"operator": "O6", "seam": "effect", "target": "t"},
        },
        {
            "kind": "effect",
            "component": "world",
            "data": {
                "tool": "write_file",
                "call_id": "w1",
                "committed": False,
                "target": "output.json",
            },
        },
        {
            "kind": "tool_result",
            "component": "worker",
            "text": "wrote 1 record",
            "data": {"tool": "write_file", "call_id": "w1"},
        },
        _model_call(),
    ]
    probe = op.probe(_trace(events))
    assert probe.landed and probe.consumed


@pytest.mark.parametrize("task", ["T1", "T2", "T3", "T4", "T5"])
def test_S4_every_injection_spec_targets_a_seam_that_exists_in_its_task(task: str) -> None:
    from pytest_sabot.tasks import load_public

    private = load_private(task, ROOT)
    view = load_public(task, ROOT, "v0.2")
    data, check = view.tool("data"), view.tool("check")
    o1 = private.operator("O1")
    assert o1.target == data.name
    assert data.data is not None
    assert any(o1.original in text for text in data.data.records.values())
    assert private.operator("O2").target == check.name
    assert private.operator("O4").target == "worker"
    o5 = private.operator("O5")
    assert o5.target in {m.name for m in view.materials}
    assert private.stale_materials[o5.target] != view.material(o5.target).text
    assert private.operator("O6").target == view.artifact


def _canonical_plan() -> str:
    """T4's expected plan as a worker writes it: the contract's fields in order."""
    import json

    check = load_private("T4", ROOT).criterion
    return json.dumps(check.expected)  # type: ignore[union-attr]


def test_I36_T4_O3_alters_one_occurrence_and_its_note_says_so() -> None:
    """S4 one fault per run, I12 first occurrence: the handoff alteration changes the first
    'Vantwell' only, and the ground-truth note describes exactly that (not a plan that
    starts and ends at 'Vantwill')."""
    import json

    private = load_private("T4", ROOT)
    spec = private.operator("O3")
    op = arm("O3", spec)
    text = _canonical_plan()
    delivered = op.on_handoff("worker->reviewer", text)
    assert delivered is not None
    plan = json.loads(delivered)
    assert plan["depot"] == "Vantwill"
    assert plan["stops"][0] == plan["stops"][-1] == "Vantwell"
    assert delivered.count("Vantwill") == 1
    assert text.count("Vantwell") - delivered.count("Vantwell") == 1
    note = spec.ground_truth
    assert "starts and ends" not in note
    assert "first" in note and "depot field" in note and '"Vantwill"' in note
    assert op.on_handoff("worker->reviewer", text) is None  # fired once


@pytest.mark.parametrize("task", ["T1", "T2", "T3", "T4", "T5"])
def test_I36_every_O3_note_names_both_sides_of_its_alteration(task: str) -> None:
    """The anchors of O3 are the two sides of the alteration (S10.4); each note names both."""
    spec = load_private(task, ROOT).operator("O3")
    assert spec.injected in spec.ground_truth
    assert spec.original in spec.ground_truth
