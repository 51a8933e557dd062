"""The fault contracts O7..O11: what is written, what is delivered, what the agent is
shown, and what the fault schedule records (planned, matched, activated, suppressed).
O12, the hung tool, has its own tests (test_lab_hung_tool.py)."""

from __future__ import annotations

from typing import Any

from lab_helpers import create_args, run, scenario, ticket_of

from pytest_sabot.lab.agent import AgentContext
from pytest_sabot.lab.faults import FAULTS
from pytest_sabot.lab.observation import TIMEOUT_MESSAGE


def _create_once(key: str | None = "k1") -> Any:
    def body(ctx: AgentContext) -> None:
        ctx.call_tool("create_ticket", create_args(ctx, key))

    return body


def test_O7_timeout_before_commit_writes_nothing_delivers_nothing_shows_generic_timeout() -> None:
    s = scenario("create-lost-before-commit")
    record = run(s, _create_once())
    streams = record.streams
    assert [r.tool for r in streams.requests] == ["create_ticket"]
    assert streams.deliveries == [] and streams.effects == []
    shown = streams.observations[0].observation
    assert shown.error is not None and shown.error.code == "timeout"
    assert shown.error.message == TIMEOUT_MESSAGE
    assert record.world_final == record.world_initial  # no ticket, no operation record
    assert record.measurement.virtual_ms == s.world.timeout_ms
    (check,) = record.gate.coverage
    assert (check.status, check.landed) == ("activated", True)


def test_O8_timeout_after_commit_keeps_write_and_operation_record_shows_same_timeout() -> None:
    s = scenario("lost-create-response")
    record = run(s, _create_once())
    streams = record.streams
    (delivery,) = streams.deliveries
    assert delivery.response.ok  # the world answered; the answer was lost
    (effect,) = streams.effects
    assert effect.kind == "ticket_created" and effect.operation_key == "k1"
    assert "create_ticket:k1" in record.world_final.operations
    lost = run(scenario("create-lost-before-commit"), _create_once())
    # indistinguishable to the agent: same code, same text, same virtual delay
    assert streams.observations[0].observation == lost.streams.observations[0].observation
    assert record.measurement.virtual_ms == lost.measurement.virtual_ms
    (check,) = record.gate.coverage
    assert (check.status, check.landed) == ("activated", True)


def test_O8_a_retry_with_the_same_key_is_answered_from_the_operation_record() -> None:
    def body(ctx: AgentContext) -> None:
        ctx.call_tool("create_ticket", create_args(ctx, "same"))
        ctx.call_tool("create_ticket", create_args(ctx, "same"))

    record = run(scenario("lost-create-response"), body)
    first, second = record.streams.deliveries
    assert not first.replayed_operation and second.replayed_operation
    assert len(record.streams.effects) == 1
    assert record.streams.observations[1].observation.result == first.response.result


def test_O8_suppressed_when_the_delivery_commits_nothing() -> None:
    def body(ctx: AgentContext) -> None:
        ctx.call_tool("create_ticket", {**create_args(ctx, "k"), "customer_id": "C-999999"})

    record = run(scenario("lost-create-response"), body)
    shown = record.streams.observations[0].observation
    assert shown.error is not None and shown.error.code == "not_found"  # passed through
    (cov,) = record.coverage
    assert cov.status == "suppressed"
    assert cov.suppressions[0].reason == "the delivery committed nothing"
    assert record.gate.outcome == "fail"  # completion fails; coverage is missing too


def test_O9_duplicate_delivery_under_a_key_writes_once() -> None:
    record = run(scenario("duplicate-create-delivery"), _create_once("k"))
    d1, d2 = record.streams.deliveries
    assert (d1.copy_number, d2.copy_number) == (1, 2)
    assert d1.arguments == d2.arguments and d2.replayed_operation
    assert len(record.streams.effects) == 1
    assert record.streams.observations[0].observation == d1.response
    assert record.gate.coverage[0].landed


def test_O9_duplicate_delivery_without_a_key_writes_twice() -> None:
    record = run(scenario("duplicate-create-delivery"), _create_once(None))
    assert len(record.streams.deliveries) == 2
    created = [e for e in record.streams.effects if e.kind == "ticket_created"]
    assert len(created) == 2 and {e.request_id for e in created} == {"r1"}
    assert "LS1" in {v.rule for v in record.gate.violations}


def _assign_after_create(waits: list[int]) -> Any:
    def body(ctx: AgentContext) -> None:
        ticket = ticket_of(ctx.call_tool("create_ticket", create_args(ctx, "c")))
        args = {"ticket_id": ticket["ticket_id"], "assignee_id": ctx.task.assignee_id,
                "expected_version": ticket["version"], "operation_key": "a"}
        for ms in waits:
            ctx.call_tool("assign_ticket", args)
            ctx.sleep(ms)
        ctx.call_tool("assign_ticket", args)

    return body


def test_O10_rate_limit_is_a_typed_denial_before_any_write_with_a_virtual_delay() -> None:
    record = run(scenario("rate-limited-assignment"), _assign_after_create([1500, 1500]))
    assigns = [r for r in record.streams.requests if r.tool == "assign_ticket"]
    denied, again, granted = assigns
    for request in (denied, again):
        assert record.streams.deliveries_of(request.request_id) == []
        error = record.streams.observation_of(request.request_id).observation.error  # type: ignore[union-attr]
        assert error is not None and error.code == "rate_limited"
        assert error.retry_after_ms == 1500
    assert [e.kind for e in record.streams.effects] == ["ticket_created", "ticket_assigned"]
    assert record.streams.effects[1].request_id == granted.request_id
    (cov,) = record.coverage
    assert [a.request_id for a in cov.activations] == [denied.request_id, again.request_id]
    assert record.measurement.virtual_ms >= 3000  # the waits are virtual, not real


def test_O10_a_retry_inside_the_delay_is_denied_again_with_the_remaining_delay() -> None:
    s = scenario("rate-limited-assignment", lambda d: d["faults"][0].update(times=1))
    record = run(s, _assign_after_create([0, 0]))
    shown = [o.observation for o in record.streams.observations[1:]]
    assert [o.error.code if o.error else "ok" for o in shown] == ["rate_limited"] * 3
    delays = [o.error.retry_after_ms for o in shown if o.error]
    assert delays[0] == 1500 and delays[1] < 1500 and delays[2] < delays[1]
    assert "inside the retry window" in record.coverage[0].activations[1].note


def test_O11_stale_read_serves_a_real_earlier_snapshot_and_leaves_state_alone() -> None:
    def body(ctx: AgentContext) -> None:
        ctx.call_tool("find_tickets", {"request_key": ctx.task.request_key})
        ctx.call_tool("find_tickets", {"request_key": ctx.task.request_key})

    record = run(scenario("stale-ticket-read"), body)
    stale, fresh = record.streams.deliveries
    assert stale.view == "snapshot" and stale.snapshot is not None
    assert fresh.view == "authoritative"
    old = stale.response.result["tickets"][0]  # type: ignore[index]
    now = stale.authoritative_response.result["tickets"][0]  # type: ignore[union-attr,index]
    assert (old["version"], old["priority"]) == (1, "normal")  # the committed version 1
    assert (now["version"], now["priority"]) == (2, "high")
    assert fresh.response.result["tickets"][0] == now  # type: ignore[index]
    assert record.streams.observations[0].observation == stale.response
    assert record.streams.effects == [] and record.world_final == record.world_initial
    assert record.gate.coverage[0].landed


def test_O11_suppressed_when_no_earlier_snapshot_answers_differently() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["faults"] = [{"id": "stale-customer", "fault": "stale_read", "tool": "get_customer"}]

    def body(ctx: AgentContext) -> None:
        ctx.call_tool("get_customer", {"customer_id": ctx.task.customer_id})

    record = run(scenario("lost-create-response", edit), body)
    (cov,) = record.coverage
    assert cov.status == "suppressed"
    assert "no earlier committed snapshot" in cov.suppressions[0].reason
    assert record.streams.deliveries[0].view == "authoritative"
    assert record.gate.outcome == "fail"  # noop-like run: completion fails


def test_schedule_records_a_planned_fault_that_never_matched_with_the_reason() -> None:
    record = run(scenario("lost-create-response"), lambda ctx: None)
    (cov,) = record.coverage
    assert cov.status == "planned" and cov.matched == []
    assert "0 request(s) to create_ticket" in cov.note


def test_schedule_a_request_taken_by_one_entry_is_a_suppression_for_the_other() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["faults"].append({"id": "also-dup", "fault": "duplicate_delivery",
                            "tool": "create_ticket", "required": False})

    record = run(scenario("lost-create-response", edit), _create_once())
    first, second = record.coverage
    assert (first.status, second.status) == ("activated", "suppressed")
    assert second.matched == ["r1"]
    assert "'lost-create' took this request" in second.suppressions[0].reason


def test_every_fault_has_an_operator_id_targets_and_a_probe() -> None:
    assert [FAULTS[k].operator for k in sorted(FAULTS, key=lambda k: FAULTS[k].operator)]
    assert {op.operator for op in FAULTS.values()} == {"O7", "O8", "O9", "O10", "O11", "O12"}
    assert FAULTS["timeout_before_commit"].targets == FAULTS["timeout_after_commit"].targets
    assert "find_tickets" in FAULTS["stale_read"].targets
    assert "create_ticket" not in FAULTS["stale_read"].targets


def test_landing_probe_reads_the_streams_not_the_schedule(lost_create: Any) -> None:
    record = run(lost_create, _create_once())
    tampered = record.model_copy(update={"streams": record.streams.model_copy(
        update={"effects": []})})
    probe = FAULTS["timeout_after_commit"].probe(tampered.streams, tampered.coverage[0])
    assert not probe.landed and "no committed effect" in probe.evidence
