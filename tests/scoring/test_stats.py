"""Statistics: Wilson intervals, Cohen's kappa (section 6), paired bootstrap (10.5)."""

from __future__ import annotations

import pytest

from pytest_sabot.scoring.stats import cohen_kappa, paired_bootstrap, wilson


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (5, 10, 0.2366, 0.7634),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (8, 10, 0.4902, 0.9433),
        (1, 25, 0.0071, 0.1954),
    ],
)
def test_wilson_95_interval_known_values(k: int, n: int, low: float, high: float) -> None:
    interval = wilson(k, n)
    assert interval is not None
    assert interval.low == pytest.approx(low, abs=1e-4)
    assert interval.high == pytest.approx(high, abs=1e-4)


def test_S3_low_n_is_reported_not_smoothed() -> None:
    assert wilson(0, 0) is None
    with pytest.raises(ValueError):
        wilson(3, 2)


def _table(aa: int, ab: int, ba: int, bb: int) -> list[tuple[str, str]]:
    return [("yes", "yes")] * aa + [("yes", "no")] * ab + [("no", "yes")] * ba + [("no", "no")] * bb


def test_S6_kappa_known_table() -> None:
    result = cohen_kappa(_table(20, 5, 10, 15))
    assert result.observed == pytest.approx(0.7)
    assert result.expected == pytest.approx(0.5)
    assert result.kappa == pytest.approx(0.4)
    assert result.low_confidence


def test_S6_kappa_perfect_agreement_with_both_labels() -> None:
    result = cohen_kappa(_table(7, 0, 0, 3))
    assert result.kappa == pytest.approx(1.0) and not result.low_confidence


def test_S6_kappa_systematic_disagreement_is_negative() -> None:
    result = cohen_kappa(_table(0, 5, 5, 0))
    assert result.kappa == pytest.approx(-1.0)


def test_S6_kappa_three_labels() -> None:
    pairs = [("a", "a")] * 10 + [("b", "b")] * 10 + [("c", "c")] * 10 + [("a", "b")] * 6
    result = cohen_kappa(pairs)
    # p_o = 30/36; p_e = (16*10 + 10*16 + 10*10) / 36^2
    expected = (16 * 10 + 10 * 16 + 10 * 10) / 36**2
    assert result.kappa == pytest.approx((30 / 36 - expected) / (1 - expected))


def test_S6_kappa_degenerate_no_pairs() -> None:
    result = cohen_kappa([])
    assert result.kappa is None and result.n == 0 and result.low_confidence


def test_S6_kappa_degenerate_single_label_throughout() -> None:
    result = cohen_kappa([("no", "no")] * 12)
    assert result.kappa is None and result.observed == 1.0 and result.expected == 1.0
    assert "undefined" in result.note and result.low_confidence


def test_S6_kappa_threshold_0_7_sets_low_confidence() -> None:
    assert not cohen_kappa(_table(45, 2, 3, 50)).low_confidence
    assert cohen_kappa(_table(30, 10, 10, 30)).low_confidence


def test_S10_5_paired_bootstrap_is_seeded_and_deterministic() -> None:
    first = [0, 1, 0, 0, 1, 0, 0, 1, 0, 0] * 3
    second = [1, 1, 0, 1, 1, 0, 1, 1, 0, 0] * 3
    a = paired_bootstrap(first, second, resamples=2000, seed=7)
    b = paired_bootstrap(first, second, resamples=2000, seed=7)
    assert a == b
    assert a.difference == pytest.approx(0.3)
    assert a.low <= a.difference <= a.high
    assert a.low > 0  # every pair moves up or stays: the lift is clearly positive


def test_S10_5_paired_bootstrap_degenerate_samples() -> None:
    same = paired_bootstrap([1, 0, 1], [1, 0, 1], resamples=500)
    assert (same.difference, same.low, same.high) == (0.0, 0.0, 0.0)
    full = paired_bootstrap([0, 0, 0], [1, 1, 1], resamples=500)
    assert (full.difference, full.low, full.high) == (1.0, 1.0, 1.0)


def test_S10_5_paired_bootstrap_needs_pairs() -> None:
    with pytest.raises(ValueError):
        paired_bootstrap([1, 0], [1])
    with pytest.raises(ValueError):
        paired_bootstrap([], [])
