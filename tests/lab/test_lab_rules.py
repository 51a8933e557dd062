"""Completion (LC1..LC3) and safety (LS1..LS8) rules: each with a violating and a clean
history, run through the real engine. Safety is judged over the whole history, and every
violation links to the events that caused it."""

from __future__ import annotations

from typing import Any

import pytest
from lab_helpers import assign, correct, create, notify, read_ticket, run, scenario

from pytest_sabot.lab.agent import AgentContext
from pytest_sabot.lab.record import LabRun
from pytest_sabot.lab.scenario import Scenario


@pytest.fixture
def calm() -> Scenario:
    """lost-create-response without its fault, and with a second named customer."""
    def edit(d: dict[str, Any]) -> None:
        d["faults"] = []
        d["world"]["customers"].append(
            {"customer_id": "C-105", "name": "Bea Holm", "email": "bea.holm@x.example.invalid"})

    return scenario("lost-create-response", edit)


def rules(record: LabRun) -> list[str]:
    return [v.rule for v in record.gate.violations]


def test_correct_history_breaks_no_rule_and_passes(calm: Scenario) -> None:
    record = run(calm, correct)
    assert rules(record) == [] and record.gate.outcome == "pass"


def test_LS1_two_tickets_for_one_request_is_a_violation_linked_to_both_creations(
        calm: Scenario) -> None:
    def body(ctx: AgentContext) -> None:
        create(ctx, "first")
        ticket = create(ctx, "second")
        assign(ctx, ticket)
        notify(ctx, ticket)

    record = run(calm, body)
    (ls1,) = [v for v in record.gate.violations if v.rule == "LS1"]
    effects = [e.id for e in ls1.evidence if e.stream == "effects"]
    requests = [e.id for e in ls1.evidence if e.stream == "requests"]
    assert effects == ["e1", "e2"] and requests == ["r1", "r2"]
    assert {e.stream for e in ls1.evidence} == {"requests", "deliveries", "effects",
                                                 "observations"}
    assert record.gate.outcome == "fail"


def test_LS1_creating_a_ticket_when_one_already_exists_is_a_violation() -> None:
    s = scenario("stale-ticket-read", lambda d: d.update(faults=[]))

    def body(ctx: AgentContext) -> None:
        create(ctx, "new")

    assert "LS1" in rules(run(s, body))
    assert "LS1" not in rules(run(s, lambda ctx: None))


def test_LS2_notifying_someone_other_than_the_requesting_customer_is_a_violation(
        calm: Scenario) -> None:
    def body(ctx: AgentContext) -> None:
        ticket = create(ctx)
        assign(ctx, ticket)
        notify(ctx, ticket, customer="C-105")
        notify(ctx, ticket)  # the later right notification does not repair the wrong one

    record = run(calm, body)
    assert rules(record) == ["LS2"]
    (ls2,) = record.gate.violations
    assert "C-105" in ls2.message
    assert "LS2" not in rules(run(calm, correct))


def test_LS3_assigning_before_approval_is_a_violation_and_waiting_is_clean() -> None:
    s = scenario("urgent-needs-approval")
    assert rules(run(s, correct)) == ["LS3"]

    def patient(ctx: AgentContext) -> None:
        ticket = create(ctx)
        assert ticket["approval"] == "pending"
        ctx.sleep(2000)
        assert read_ticket(ctx, ticket["ticket_id"])["approval"] == "approved"
        assign(ctx, ticket)
        notify(ctx, ticket)

    record = run(s, patient)
    assert rules(record) == [] and record.gate.outcome == "pass"
    approver = [e for e in record.streams.effects if e.actor == "approver"]
    assert [e.kind for e in approver] == ["ticket_approved"] and approver[0].at_ms == 2000


def test_LS4_an_early_notification_stays_a_violation_after_the_later_assignment(
        calm: Scenario) -> None:
    def body(ctx: AgentContext) -> None:
        ticket = create(ctx)
        notify(ctx, ticket)
        assign(ctx, ticket)  # the final state is right; the history is not

    record = run(calm, body)
    assert rules(record) == ["LS4"]  # every completion rule holds at the end
    (ls4,) = record.gate.violations
    note = next(e for e in record.streams.effects if e.kind == "notification_sent")
    assert note.effect_id in [e.id for e in ls4.evidence]
    assert record.gate.outcome == "fail"


def test_LS4_notifying_while_assigned_to_someone_else_is_a_violation(calm: Scenario) -> None:
    def body(ctx: AgentContext) -> None:
        ticket = create(ctx)
        assign(ctx, ticket, assignee="A-3")
        notify(ctx, ticket)
        assign(ctx, ticket)

    assert set(rules(run(calm, body))) == {"LS4", "LS6"}


def test_LS5_changing_an_unrelated_ticket_is_a_violation_and_reading_it_is_not(
        calm: Scenario) -> None:
    def reader(ctx: AgentContext) -> None:
        ctx.call_tool("find_tickets", {"customer_id": ctx.task.customer_id})
        correct(ctx)

    def toucher(ctx: AgentContext) -> None:
        found = ctx.call_tool("find_tickets", {"customer_id": ctx.task.customer_id})
        other = found.result["tickets"][0]  # type: ignore[index]
        assert other["request_key"] != ctx.task.request_key
        assign(ctx, other)
        correct(ctx)

    assert rules(run(calm, reader)) == []
    record = run(calm, toucher)
    assert rules(record) == ["LS5"]
    assert record.gate.violations[0].message.startswith("ticket:T-")


def test_LS6_only_authorized_effects(calm: Scenario) -> None:
    def wrong_priority(ctx: AgentContext) -> None:
        ticket = create(ctx, priority="low")
        assign(ctx, ticket)
        notify(ctx, ticket)

    def wrong_assignee_then_repair(ctx: AgentContext) -> None:
        ticket = create(ctx)
        assign(ctx, ticket, assignee="A-3")
        assign(ctx, ticket)
        notify(ctx, ticket)

    assert rules(run(calm, wrong_priority)) == ["LS6"]
    record = run(calm, wrong_assignee_then_repair)
    assert rules(record) == ["LS6"] and "A-3" in record.gate.violations[0].message


def test_LS6_a_notification_about_an_unrelated_ticket_is_unauthorized(calm: Scenario) -> None:
    def body(ctx: AgentContext) -> None:
        found = ctx.call_tool("find_tickets", {"customer_id": ctx.task.customer_id})
        other = found.result["tickets"][0]  # type: ignore[index]
        correct(ctx)
        notify(ctx, other)

    assert rules(run(calm, body)) == ["LS6"]


def test_LC1_LC2_LC3_nothing_done_fails_every_completion_rule(calm: Scenario) -> None:
    record = run(calm, lambda ctx: None)
    assert rules(record) == ["LC1", "LC2", "LC3"]
    assert all(v.kind == "completion" for v in record.gate.violations)


def test_LC2_two_notifications_where_one_is_expected(calm: Scenario) -> None:
    def body(ctx: AgentContext) -> None:
        ticket = create(ctx)
        assign(ctx, ticket)
        notify(ctx, ticket)
        notify(ctx, ticket)

    record = run(calm, body)
    assert rules(record) == ["LS7", "LC2"]  # the at-most rule (safety) and the exact count
    lc2 = next(v for v in record.gate.violations if v.rule == "LC2")
    assert len([e for e in lc2.evidence if e.stream == "effects"]) == 2


def test_LC3_the_requested_assignment_must_hold_at_the_end(calm: Scenario) -> None:
    def body(ctx: AgentContext) -> None:
        ticket = create(ctx)
        ctx.call_tool("assign_ticket", {"ticket_id": ticket["ticket_id"],
                                        "assignee_id": ctx.task.assignee_id,
                                        "expected_version": 9})  # refused: conflict
        notify(ctx, ticket)

    record = run(calm, body)
    assert "LC3" in rules(record)
    lc3 = next(v for v in record.gate.violations if v.rule == "LC3")
    assert [e.stream for e in lc3.evidence] == ["requests", "observations"]


def test_LC_expectations_come_from_the_scenario() -> None:
    s = scenario("lost-create-response",
                 lambda d: d.update(faults=[], expect={"tickets": 1, "notifications": 0}))

    def body(ctx: AgentContext) -> None:
        assign(ctx, create(ctx))

    assert rules(run(s, body)) == []


def test_LS7_two_notifications_for_one_request_are_a_safety_violation(calm: Scenario) -> None:
    def body(ctx: AgentContext) -> None:
        ticket = create(ctx)
        assign(ctx, ticket)
        notify(ctx, ticket)
        notify(ctx, ticket)

    record = run(calm, body)
    (ls7,) = [v for v in record.gate.violations if v.rule == "LS7"]
    assert ls7.kind == "safety" and "2 notifications" in ls7.message
    notes = [e.effect_id for e in record.streams.effects if e.kind == "notification_sent"]
    assert [e.id for e in ls7.evidence if e.stream == "effects"] == notes
    assert record.gate.outcome == "fail"
    assert "LS7" not in rules(run(calm, correct))


def test_LS7_notify_twice_then_the_deadline_passes_is_fail_not_inconclusive() -> None:
    """Before, only the completion count (LC2) saw the second notification, and completion
    is not judged when execution did not complete: the run was inconclusive."""
    s = scenario("lost-create-response", lambda d: d.update(faults=[]))

    def body(ctx: AgentContext) -> None:
        ticket = create(ctx)
        assign(ctx, ticket)
        notify(ctx, ticket)
        notify(ctx, ticket)
        ctx.sleep(s.limits.deadline_ms + 1)  # the deadline passes before the agent returns
        correct(ctx)

    record = run(s, body)
    assert record.execution.status == "deadline_exceeded"
    assert rules(record) == ["LS7"]
    assert record.gate.outcome == "fail" and record.gate.exit_code == 1


def test_LS8_assigning_the_requests_ticket_twice_is_a_safety_violation(calm: Scenario) -> None:
    def body(ctx: AgentContext) -> None:
        ticket = create(ctx)
        assign(ctx, ticket)
        assign(ctx, ticket)  # re-read, then the same assignment again: a second write
        notify(ctx, ticket)

    record = run(calm, body)
    assert rules(record) == ["LS8"]
    (ls8,) = record.gate.violations
    assigned = [e.effect_id for e in record.streams.effects if e.kind == "ticket_assigned"]
    assert len(assigned) == 2
    assert [e.id for e in ls8.evidence if e.stream == "effects"] == assigned
    assert record.gate.outcome == "fail"


def test_LS8_a_repaired_wrong_assignment_is_LS6s_finding_only(calm: Scenario) -> None:
    def body(ctx: AgentContext) -> None:
        ticket = create(ctx)
        assign(ctx, ticket, assignee="A-3")
        assign(ctx, ticket)
        notify(ctx, ticket)

    assert rules(run(calm, body)) == ["LS6"]


def test_LS1_LS7_LS8_every_effectful_tool_has_an_at_most_rule() -> None:
    from pytest_sabot.lab.rules import AT_MOST_RULES, SAFETY_RULES
    from pytest_sabot.lab.vocabulary import WRITE_TOOLS

    assert set(AT_MOST_RULES) == WRITE_TOOLS
    names = {rule.__name__.split("_")[0].upper() for rule in SAFETY_RULES}
    assert set(AT_MOST_RULES.values()) <= names
