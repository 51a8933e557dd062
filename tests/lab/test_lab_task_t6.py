"""T6, the lab's helpdesk task: a public view and a private spec like T1..T5. What reaches
the pipeline (the public view and the prompts built from it) holds nothing private: no
fault schedule, no ground truth, no world fixture beyond the request, no expected count;
a malformed private file is a clear error naming its file and field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.harness import lab_prompts
from pytest_sabot.lab.catalog import build_catalog
from pytest_sabot.matrix.task_views import load_private, load_public

ROOT = Path(__file__).resolve().parents[2]


def _root(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "tasks" / "T6", tmp_path / "tasks" / "T6")
    return tmp_path


def test_L_T6_prompts_hold_nothing_private() -> None:
    view = load_public("T6", ROOT, "v0.2")
    private = load_private("T6", ROOT)
    assert view.lab is not None and private.lab is not None
    catalog = build_catalog(view.lab.contracts, list(view.lab.capabilities))
    worker = lab_prompts.worker_messages(view, catalog, 0, "")
    review = lab_prompts.reviewer_messages(view, catalog, "TICKET: none", "", 0, False)
    magentic = lab_prompts.magentic_task(view, catalog, True)
    texts = [worker.system, worker.user, review.system, review.user, magentic]
    secrets = [spec.ground_truth for spec in private.operators.values()]
    secrets += [spec.fault.id for spec in private.operators.values()]  # type: ignore[union-attr]
    secrets += ["timeout_after_commit", "stale_read", "duplicate_delivery"]
    secrets += [c.email for c in private.lab.world.customers]
    secrets += [t.subject for t in private.lab.world.existing_tickets]
    for text in texts:
        for secret in secrets:
            assert secret not in text
    assert "find_tickets(request_key, customer_id)" in worker.user
    assert "idempotency supported, key operation_key" in worker.user


def test_L_T6_operator_planting_another_fault_is_a_clear_error(tmp_path: Path) -> None:
    root = _root(tmp_path)
    path = root / "tasks" / "T6" / "private" / "operators.yaml"
    path.write_text(path.read_text().replace("fault: timeout_after_commit", "fault: rate_limit"))
    with pytest.raises(SabotDataError) as info:
        load_private("T6", root)
    assert str(path) in str(info.value) and "O8 must plant timeout_after_commit" in str(
        info.value)


def test_L_T6_fault_on_a_tool_the_pipeline_lacks_is_a_clear_error(tmp_path: Path) -> None:
    root = _root(tmp_path)
    task = root / "tasks" / "T6" / "public" / "task.yaml"
    task.write_text(task.read_text().replace("  - assign_ticket\n", ""))
    with pytest.raises(SabotDataError) as info:
        load_private("T6", root)
    assert "operators.yaml" in str(info.value) and "operators.O10.fault" in str(info.value)


def test_L_T6_every_row_name_makes_a_valid_scenario_name() -> None:
    from pytest_sabot.lab.task import cell_scenario_name

    assert cell_scenario_name("local_agent-default-O8-T6-s11") == "local-agent-default-o8-t6-s11"
    assert cell_scenario_name("langgraph-default-baseline-T6-s11") == \
        "langgraph-default-baseline-t6-s11"
    assert cell_scenario_name("mcp_client-default-O7-T6-s3") == "mcp-client-default-o7-t6-s3"
