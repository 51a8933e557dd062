"""The spend cap on the live path: a tiny cap stops new upstream calls and the wave; the
cells it stops are not RUN_ERRORs but "not run: budget" (SPEC I44), the session ends on its
own with pytest's "interrupted" status and its results marked incomplete, and spend stays
under the cap; the cap is the project's, so a resume under the same cap spends nothing more,
and a resumed session with a larger cap finishes the wave within it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from live_sessions import TINY_BUDGET_USD, Session, read_events

from pytest_sabot.gateway.ledger import read_ledger
from pytest_sabot.gateway.prices import load_prices
from pytest_sabot.gateway.protocol import Usage

pytestmark = pytest.mark.slow

SLICE_CELLS = 4  # langgraph x (default, guardrail) x (baseline, O1)


def _results(session: Session) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((session.out / "results.json").read_text("utf-8"))
    return data


def _exclusion(cell: dict[str, Any]) -> str | None:
    """RUN_ERROR (or another exclusion code) of a fault cell, a baseline's status else."""
    if cell["kind"] == "baseline":
        return str(cell["status"])
    excluded = cell.get("excluded")
    return None if excluded is None else str(excluded["code"])


def _run_errors(session: Session) -> dict[str, str]:
    """RUN_ERROR text of every cell whose final attempt failed, by cell id."""
    found: dict[str, str] = {}
    for trace in sorted((session.out / "cells").glob("*/events.jsonl")):
        errors = [e for e in read_events(trace) if e["kind"] == "run_error"]
        if errors:
            found[trace.parent.name] = errors[-1]["data"]["message"]
    return found


def test_budget_tiny_cap_ends_the_session_cleanly(
    budget_sessions: tuple[Session, Session, Session],
) -> None:
    tiny, _, _ = budget_sessions
    assert tiny.returncode == pytest.ExitCode.INTERRUPTED, tiny.stdout[-3000:] + tiny.stderr
    results = _results(tiny)
    assert results["session"]["status"] == "budget-stopped"
    selection = results["selection"]
    assert selection["complete"] is False
    not_run = {c["cell_id"]: c["reason"] for c in selection["not_run"]}
    assert not_run and set(not_run.values()) == {"budget"}
    assert selection["recorded"] + len(not_run) == SLICE_CELLS


def test_budget_spend_never_exceeds_the_cap(
    budget_sessions: tuple[Session, Session, Session],
) -> None:
    tiny, _, _ = budget_sessions
    budget = _results(tiny)["spend"]["budget"]
    assert budget["budget_usd"] == TINY_BUDGET_USD
    assert budget["exhausted"] is True
    assert 0 < budget["spent_usd"] <= TINY_BUDGET_USD
    served = [e for e in tiny.provider if e["status"] == 200]
    assert served, "the cap admitted no call at all: the test cap is too small to show a stop"


def test_budget_stopped_cells_are_not_run_errors_and_name_the_budget(
    budget_sessions: tuple[Session, Session, Session],
) -> None:
    tiny, _, _ = budget_sessions
    errors = _run_errors(tiny)
    assert errors, "no cell was stopped by the cap"
    verdicts = {c["cell_id"]: c for c in _results(tiny)["cells"]}
    not_run = {c["cell_id"]: c["reason"] for c in _results(tiny)["selection"]["not_run"]}
    for cell_id, message in errors.items():
        assert "budget" in message.lower(), (cell_id, message)
        assert cell_id not in verdicts, verdicts[cell_id]  # never scored, never excluded
        assert not_run[cell_id] == "budget"
        outcome = json.loads((tiny.out / "cells" / cell_id / "outcome.json").read_text())
        assert outcome["stopped"] == "budget" and outcome["attempts"] == 1  # not retried


def test_budget_resume_with_a_larger_cap_finishes_the_wave(
    budget_sessions: tuple[Session, Session, Session],
) -> None:
    _, _, resumed = budget_sessions
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert _run_errors(resumed) == {}
    cells = _results(resumed)["cells"]
    assert len(cells) == SLICE_CELLS
    assert [c["cell_id"] for c in cells if _exclusion(c) == "RUN_ERROR"] == []


def _billed(session: Session) -> float:
    """What the stand-in provider billed this session: its usage times the price table."""
    prices = load_prices()
    total = 0.0
    for entry in session.provider:
        if entry["status"] == 200:
            usage = Usage(
                prompt_tokens=entry["usage"]["prompt_tokens"],
                completion_tokens=entry["usage"]["completion_tokens"],
            )
            cost = prices.cost(entry["model"], usage)
            assert cost is not None
            total += cost
    return total


def test_S8_cap_is_the_projects_a_resume_under_the_same_cap_continues_its_account(
    budget_sessions: tuple[Session, Session, Session],
) -> None:
    tiny, same_cap, resumed = budget_sessions
    # The resume continues the tiny session's account instead of opening a fresh cap: it is
    # stopped by the same cap again, and the two together stay under it.
    assert same_cap.returncode == pytest.ExitCode.INTERRUPTED, same_cap.stdout[-3000:]
    assert _results(same_cap)["session"]["status"] == "budget-stopped"
    assert _billed(tiny) + _billed(same_cap) <= TINY_BUDGET_USD
    ledger = read_ledger(resumed.out.parent)  # the project ledger of the sessions' output
    assert ledger.holds == {}
    billed = _billed(tiny) + _billed(same_cap) + _billed(resumed)
    assert ledger.spent_usd == pytest.approx(billed, rel=1e-9)
    assert len(ledger.gateways) == 3  # one account, three sessions
    assert ledger.spent_usd <= 25
    budget = _results(resumed)["spend"]["budget"]
    assert budget["project_spent_usd"] == pytest.approx(ledger.spent_usd, rel=1e-9)
