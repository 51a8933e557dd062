"""The consistency checks on usage an MCP client registers (docs/LAB.md, MU1..MU7), one by
one, on the pure functions the server calls (``pytest_sabot.lab.client_usage``). The tests
in test_mcp_usage.py drive the same checks through a real MCP client."""

from __future__ import annotations

from typing import Any

from pytest_sabot.lab.client_usage import CHECKS, check_entry, check_total, register, settle
from pytest_sabot.lab.record import UsageEntry

GOOD: dict[str, Any] = {"provider": "loopback", "model": "m-1", "calls": 1,
                        "input_tokens": 120, "output_tokens": 30}


def _rules(arguments: dict[str, Any], *, context_read: bool = True, actions_before: int = 3,
           calls_before: int = 0) -> list[str]:
    return [f.rule for f in check_entry(arguments, context_read=context_read,
                                        actions_before=actions_before,
                                        calls_before=calls_before)]


def _entries(*registrations: dict[str, Any], actions: int = 10) -> list[UsageEntry]:
    entries: list[UsageEntry] = []
    for arguments in registrations:
        entries.append(register(entries, arguments, context_read=True,
                                actions_before=actions, at_ms=0))
    return entries


def test_a_consistent_registration_fails_no_check() -> None:
    assert _rules(GOOD) == [] and _rules({**GOOD, "cost_usd": 0.0004}) == []
    assert _rules({**GOOD, "provider": "together", "model": "Qwen/Qwen3.5-9B"}) == []


def test_MU1_only_the_known_fields() -> None:
    missing = {k: v for k, v in GOOD.items() if k != "output_tokens"}
    assert _rules(missing) == ["MU1"]
    failed = check_entry({**GOOD, "total_tokens": 150}, context_read=True, actions_before=3,
                         calls_before=0)
    assert [f.rule for f in failed] == ["MU1"] and "total_tokens" in failed[0].message


def test_MU2_one_provider_and_one_model_per_entry() -> None:
    assert _rules({**GOOD, "model": "m-1, m-2"}) == ["MU2"]
    assert _rules({**GOOD, "model": ["m-1", "m-2"]}) == ["MU2"]
    assert _rules({**GOOD, "provider": ""}) == ["MU2"]
    assert _rules({**GOOD, "provider": "open ai"}) == ["MU2"]
    assert _rules({**GOOD, "model": "m" * 201}) == ["MU2"]


def test_MU3_counts_are_non_negative_integers_and_the_cost_a_finite_number() -> None:
    assert _rules({**GOOD, "output_tokens": -1}) == ["MU3"]
    assert _rules({**GOOD, "input_tokens": 12.5}) == ["MU3"]
    assert _rules({**GOOD, "calls": True}) == ["MU3"]
    assert _rules({**GOOD, "calls": "1"}) == ["MU3"]
    assert _rules({**GOOD, "cost_usd": -0.01}) == ["MU3"]
    assert _rules({**GOOD, "cost_usd": float("inf")}) == ["MU3"]
    assert _rules({**GOOD, "cost_usd": "free"}) == ["MU3"]


def test_MU4_tokens_are_present_when_calls_are_registered() -> None:
    assert _rules({**GOOD, "calls": 0, "input_tokens": 0, "output_tokens": 0}) == ["MU4"]
    assert _rules({**GOOD, "calls": 0}) == ["MU4"]  # tokens without a call
    assert _rules({**GOOD, "calls": 2, "input_tokens": 1}) == ["MU4"]
    assert _rules({**GOOD, "calls": 2, "input_tokens": 2, "output_tokens": 0}) == []


def test_MU5_nothing_registered_before_the_context_was_read() -> None:
    assert _rules(GOOD, context_read=False, actions_before=0) == ["MU5"]
    entry = register([], GOOD, context_read=False, actions_before=0, at_ms=0)
    assert not entry.counted and entry.context_read is False


def test_MU6_no_more_calls_than_the_clients_actions_justify() -> None:
    assert _rules({**GOOD, "calls": 4}, actions_before=3) == []  # one per action, one more
    assert _rules({**GOOD, "calls": 5}, actions_before=3) == ["MU6"]
    assert _rules(GOOD, actions_before=3, calls_before=4) == ["MU6"]
    # only consistent entries count toward the calls before: an inconsistent one is not used
    entries = _entries({**GOOD, "calls": 3}, {**GOOD, "calls": 30, "input_tokens": 900},
                       {**GOOD, "calls": 2}, {**GOOD, "calls": 1}, actions=4)
    assert [[f.rule for f in e.failed] for e in entries] == [[], ["MU6"], [], ["MU6"]]
    entries = _entries({**GOOD, "calls": 3}, {**GOOD, "calls": 2, "input_tokens": 1},
                       {**GOOD, "calls": 2}, actions=4)
    assert [[f.rule for f in e.failed] for e in entries] == [[], ["MU4"], []]


def test_MU7_the_declared_total_equals_the_sum_of_the_entries() -> None:
    entries = _entries({**GOOD, "cost_usd": 0.1}, {**GOOD, "calls": 2, "cost_usd": 0.2})
    total = {"calls": 3, "input_tokens": 240, "output_tokens": 60}
    assert check_total(entries, None) == [] and check_total(entries, total) == []
    assert check_total(entries, {**total, "cost_usd": 0.3}) == []
    assert [f.rule for f in check_total(entries, {**total, "calls": 4})] == ["MU7"]
    assert [f.rule for f in check_total(entries, {**total, "cost_usd": 0.31})] == ["MU7"]
    assert [f.rule for f in check_total(entries, {"calls": 3})] == ["MU7"]
    assert [f.rule for f in check_total(entries, 3)] == ["MU7"]
    # a declared cost needs every entry's cost
    no_cost = _entries(GOOD, {**GOOD, "cost_usd": 0.2})
    assert [f.rule for f in check_total(no_cost, {"calls": 2, "input_tokens": 240,
                                                  "output_tokens": 60,
                                                  "cost_usd": 0.2})] == ["MU7"]


def test_MU7_a_total_that_differs_counts_no_entry() -> None:
    entries = _entries(GOOD, {**GOOD, "model": "m-2"})
    usage = settle(entries, {"calls": 5, "input_tokens": 240, "output_tokens": 60})
    assert usage.status == "inconsistent" and usage.counted == []
    assert [e.counted for e in usage.entries] == [False, False]
    assert [f.rule for f in usage.total_failed] == ["MU7"]
    assert usage.entries[0].failed == []  # kept as consistent in itself, just not counted


def test_settle_counts_consistent_entries_per_provider_and_model_never_across_them() -> None:
    entries = _entries({**GOOD, "cost_usd": 0.25}, {**GOOD, "calls": 2, "cost_usd": 0.5},
                       {**GOOD, "provider": "other", "model": "m-9"},
                       {**GOOD, "calls": -1})
    usage = settle(entries, None)
    assert usage.status == "partly_inconsistent"
    assert [(c.provider, c.model, c.calls, c.input_tokens, c.output_tokens, c.cost_usd)
            for c in usage.counted] == [("loopback", "m-1", 3, 240, 60, 0.75),
                                        ("other", "m-9", 1, 120, 30, "unknown")]
    assert [e.counted for e in usage.entries] == [True, True, True, False]
    assert settle([], None).status == "none" and settle([], None).counted == []
    assert settle(_entries(GOOD), None).status == "consistent"
    assert settle(_entries({**GOOD, "calls": 0}), None).status == "inconsistent"


def test_every_check_is_in_the_lab_guide() -> None:
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "LAB.md").read_text()
    assert [rule for rule in CHECKS if f"| {rule} |" not in guide] == []
