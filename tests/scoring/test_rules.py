"""The rule versions (mappings/rules.yaml) and the switches each one puts in force."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.models.cells import RULE_VERSIONS
from pytest_sabot.core.models.rules import load_rule_book, version_key


def test_rule_book_lists_every_registered_version_oldest_first(book) -> None:
    assert tuple(book.names()) == RULE_VERSIONS


@pytest.mark.parametrize("version", ["v0.1.1", "v0.1.2", "v0.1.3"])
def test_S10_wave1_rules_have_no_flags_and_identity_reacted(book, version: str) -> None:
    rules = book.get(version)
    assert not rules.flags_surface and not rules.union_headline
    assert rules.reacted == "identity" and not rules.narrow_retry_reason
    assert not rules.o4_probe_requires_served_downgrade
    assert rules.block_exact_match  # SPEC I9: the published exact surface in every wave


def test_S10_v0_2_0_switches(book) -> None:
    rules = book.get("v0.2.0")
    assert rules.flags_surface and rules.union_headline and rules.reacted == "independent"
    assert rules.o4_probe_requires_served_downgrade and rules.block_exact_match
    assert not rules.narrow_retry_reason and not rules.o4_flags_excluded


def test_S2_v0_2_1_switches(book) -> None:
    rules = book.get("v0.2.1")
    assert rules.narrow_retry_reason and rules.o4_flags_excluded and rules.union_headline


def test_unknown_rule_version_names_the_known_ones(book) -> None:
    with pytest.raises(KeyError, match=r"v0\.1\.1, v0\.1\.2"):
        book.get("v9.9.9")


def test_version_key_orders_numerically() -> None:
    assert version_key("v0.10.0") > version_key("v0.2.1")
    with pytest.raises(ValueError):
        version_key("0.2.1")


def test_bad_rules_file_names_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "rules.yaml"
    bad.write_text("versions:\n  - version: v0.1.1\n    date: '2026-07-22'\n    summary: s\n"
                   "    flags_surface: maybe\n")
    with pytest.raises(SabotDataError, match=r"rules\.yaml: field 'versions\.0\.flags_surface'"):
        load_rule_book(bad)


@settings(max_examples=60, deadline=None)
@given(review=st.text(), stop=st.text())
def test_S5_S10_score_cell_never_raises_and_headline_is_consistent(kit, review: str,
                                                                   stop: str) -> None:
    b = kit.injected("autogen", "guardrail").review(review, component="critic")
    b.add("stop_reason", "orchestrator", stop)
    for version in ("v0.1.3", "v0.2.1"):
        v = kit.score(b, version)
        union = kit.rules(version).union_headline
        assert v.detected_hard == (v.wave1_mapping or (union and v.anchored_flag))
        assert (v.detection == "DETECTED_HARD") == v.detected_hard
