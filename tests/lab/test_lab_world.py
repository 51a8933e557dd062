"""The simulated helpdesk: deterministic per seed, entity versions, the published
idempotency contracts, typed conflicts, non-unique request keys and the approver."""

from __future__ import annotations

from typing import Any

from lab_helpers import create, create_args, read_ticket, run, scenario, ticket_of

from pytest_sabot.lab.agent import AgentContext
from pytest_sabot.lab.controllers import CONTROLLERS
from pytest_sabot.lab.record import LabRun
from pytest_sabot.lab.world.build import build_world


def _calm(d: dict[str, Any]) -> None:
    d["faults"] = []


def _without_timings(record: LabRun) -> dict[str, Any]:
    return record.model_dump(mode="json", exclude={"timings"})


def test_a_seed_gives_the_same_run_every_time() -> None:
    for name in ("lost-create-response", "stale-ticket-read", "rate-limited-assignment"):
        s = scenario(name)
        for controller in CONTROLLERS.values():
            first, second = run(s, controller), run(s, controller)
            assert _without_timings(first) == _without_timings(second), (name, controller)


def test_another_seed_gives_another_background_world() -> None:
    s7 = scenario("lost-create-response")
    s8 = scenario("lost-create-response", lambda d: d["world"].update(seed=8))
    w7 = build_world(s7.world, {s7.task.request_key}).states[-1]
    w8 = build_world(s8.world, {s8.task.request_key}).states[-1]
    assert set(w7.tickets) != set(w8.tickets)
    assert set(w7.customers) != set(w8.customers)
    assert {"C-104"} <= set(w7.customers) & set(w8.customers)  # named ones always exist


def test_background_tickets_never_carry_the_task_request_key() -> None:
    s = scenario("lost-create-response")
    state = build_world(s.world, {s.task.request_key}).states[-1]
    assert len(state.tickets) == s.world.background_tickets
    assert all(t.request_key != s.task.request_key for t in state.tickets.values())
    assert all(c.email.endswith(".invalid") for c in state.customers.values())


def test_existing_ticket_history_is_committed_snapshot_by_snapshot() -> None:
    s = scenario("stale-ticket-read")
    prelude = build_world(s.world, {s.task.request_key})
    versions = [
        [t.version for t in state.tickets.values() if t.request_key == s.task.request_key]
        for state in prelude.states
    ]
    assert versions == [[], [1], [2]]
    assert list(prelude.times) == sorted(prelude.times) and prelude.times[-1] < 0


def test_request_keys_are_not_unique_constraints() -> None:
    def body(ctx: AgentContext) -> None:
        a, b = create(ctx, "one"), create(ctx, "two")
        assert a["ticket_id"] != b["ticket_id"]
        assert a["request_key"] == b["request_key"]

    record = run(scenario("lost-create-response", _calm), body)
    assert record.execution.status == "completed"


def test_assign_with_a_stale_version_is_a_typed_conflict_that_changes_nothing() -> None:
    seen: dict[str, Any] = {}

    def body(ctx: AgentContext) -> None:
        ticket = create(ctx)
        args = {"ticket_id": ticket["ticket_id"], "assignee_id": "A-3", "expected_version": 1}
        seen["first"] = ticket_of(ctx.call_tool("assign_ticket", args))
        seen["stale"] = ctx.call_tool("assign_ticket", {**args, "assignee_id": "A-7"})
        seen["after"] = read_ticket(ctx, ticket["ticket_id"])

    record = run(scenario("lost-create-response", _calm), body)
    assert seen["first"]["version"] == 2 and seen["first"]["status"] == "assigned"
    assert seen["stale"].error.code == "version_conflict"
    assert "version 1" in seen["stale"].error.message
    assert seen["after"]["assignee_id"] == "A-3" and seen["after"]["version"] == 2
    assigned = [e for e in record.streams.effects if e.kind == "ticket_assigned"]
    assert [(e.before_version, e.after_version) for e in assigned] == [(1, 2)]


def test_supported_idempotency_refuses_a_reused_key_with_other_arguments() -> None:
    shown: list[Any] = []

    def body(ctx: AgentContext) -> None:
        shown.append(ctx.call_tool("create_ticket", create_args(ctx, "k")))
        shown.append(ctx.call_tool("create_ticket", {**create_args(ctx, "k"),
                                                     "subject": "something else"}))

    record = run(scenario("lost-create-response", _calm), body)
    assert shown[0].ok and shown[1].error.code == "idempotency_key_reuse"
    assert len(record.streams.effects) == 1


def test_unsupported_idempotency_takes_no_operation_key() -> None:
    s = scenario("lost-create-no-idempotency", _calm)
    shown: list[Any] = []

    def body(ctx: AgentContext) -> None:
        contract = ctx.contract("create_ticket")
        assert contract is not None and contract.idempotency.support == "unsupported"
        assert "operation_key" not in contract.arguments["properties"]
        shown.append(ctx.call_tool("create_ticket", create_args(ctx, "k")))

    record = run(s, body)
    assert shown[0].error.code == "invalid_arguments"
    assert "operation_key" in shown[0].error.message
    assert record.streams.effects == []


def test_the_approver_approves_pending_tickets_after_the_configured_delay() -> None:
    def body(ctx: AgentContext) -> None:
        ticket = create(ctx)
        ctx.sleep(1000)
        assert read_ticket(ctx, ticket["ticket_id"])["approval"] == "pending"
        ctx.sleep(1000)
        after = read_ticket(ctx, ticket["ticket_id"])
        assert (after["approval"], after["version"]) == ("approved", 2)

    record = run(scenario("urgent-needs-approval"), body)
    assert record.execution.status == "completed", record.execution.detail
    approval = record.streams.effects[-1]
    assert (approval.actor, approval.kind, approval.delivery_id) == (
        "approver", "ticket_approved", None)
