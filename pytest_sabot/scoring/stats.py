"""Statistics for the published tables: Wilson intervals, paired bootstrap contrasts, and
Cohen's kappa. Pure, deterministic, standard library only. A small n is reported as is."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # two-sided 95% normal quantile
KAPPA_THRESHOLD = 0.7  # section 6: below this the soft tier is low-confidence
DEFAULT_RESAMPLES = 10_000  # bootstrap resamples of every published contrast
DEFAULT_SEED = 20260723  # seed of the bootstrap's random generator


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def wilson(k: int, n: int, z: float = Z95) -> Interval | None:
    """Wilson score interval for k successes in n trials; None when n == 0."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return None
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return Interval(low=max(0.0, centre - half), high=min(1.0, centre + half))


@dataclass(frozen=True)
class Contrast:
    """second - first, paired by cell, with a percentile bootstrap interval."""

    difference: float
    low: float
    high: float
    n: int
    resamples: int
    seed: int


def paired_bootstrap(
    first: Sequence[float | bool],
    second: Sequence[float | bool],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> Contrast:
    """Paired percentile bootstrap of mean(second) - mean(first).

    ``first[i]`` and ``second[i]`` are the same cell in two waves (or two readings).
    Resampling draws cell indices with replacement from a ``random.Random(seed)``, so the
    interval is reproducible from the seed. The interval bounds are the order statistics at
    floor(alpha/2 * R) and ceil((1 - alpha/2) * R) - 1 of the sorted resampled differences.
    """
    if len(first) != len(second):
        raise ValueError("paired samples must have the same length")
    n = len(first)
    if n == 0:
        raise ValueError("a paired bootstrap needs at least one pair")
    diffs = [float(b) - float(a) for a, b in zip(first, second, strict=True)]
    rng = random.Random(seed)
    return _percentile_contrast(
        sum(diffs) / n,
        (sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples)),
        n=n, resamples=resamples, seed=seed, level=level,
    )


def independent_bootstrap(
    first: Sequence[float | bool],
    second: Sequence[float | bool],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> Contrast:
    """Percentile bootstrap of mean(second) - mean(first) for two independent samples
    (each resampled from itself with one ``random.Random(seed)``); the same order-statistic
    bounds as :func:`paired_bootstrap`. ``n`` is the smaller sample size."""
    if not first or not second:
        raise ValueError("an independent bootstrap needs both samples non-empty")
    a = [float(x) for x in first]
    b = [float(x) for x in second]
    rng = random.Random(seed)
    return _percentile_contrast(
        sum(b) / len(b) - sum(a) / len(a),
        (
            sum(b[rng.randrange(len(b))] for _ in b) / len(b)
            - sum(a[rng.randrange(len(a))] for _ in a) / len(a)
            for _ in range(resamples)
        ),
        n=min(len(a), len(b)), resamples=resamples, seed=seed, level=level,
    )


def _percentile_contrast(
    difference: float, resampled: Iterable[float], *, n: int, resamples: int, seed: int,
    level: float,
) -> Contrast:
    """The contrast with its percentile interval: the order statistics at
    floor(alpha/2 * R) and ceil((1 - alpha/2) * R) - 1 of the ``resamples`` sorted
    ``resampled`` differences (drawn only after the arguments are checked)."""
    if resamples < 1 or not 0 < level < 1:
        raise ValueError("resamples >= 1 and 0 < level < 1")
    stats = sorted(resampled)
    alpha = 1 - level
    lo_idx = math.floor(alpha / 2 * resamples)
    hi_idx = max(lo_idx, math.ceil((1 - alpha / 2) * resamples) - 1)
    return Contrast(
        difference=difference,
        low=stats[lo_idx],
        high=stats[min(hi_idx, resamples - 1)],
        n=n,
        resamples=resamples,
        seed=seed,
    )


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa over double-judged cells.

    Degenerate cases: with no pairs, kappa is None ("no double-judged cells"); when chance
    agreement is 1 (both passes gave every cell the same single label) kappa is 0/0 and is
    reported as None with that note, the observed agreement still shown. A None kappa is
    treated as low-confidence, like kappa < 0.7.
    """

    kappa: float | None
    observed: float | None
    expected: float | None
    n: int
    note: str = ""

    @property
    def low_confidence(self) -> bool:
        return self.kappa is None or self.kappa < KAPPA_THRESHOLD


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> Kappa:
    """Cohen's kappa for two label sequences given as (first pass, second pass) pairs."""
    n = len(pairs)
    if n == 0:
        return Kappa(None, None, None, 0, "no double-judged cells")
    observed = sum(1 for a, b in pairs if a == b) / n
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    expected = sum(first[label] * second[label] for label in first) / (n * n)
    if math.isclose(expected, 1.0):
        return Kappa(
            None, observed, expected, n,
            "chance agreement is 1 (a single label used throughout); kappa is undefined",
        )
    return Kappa((observed - expected) / (1 - expected), observed, expected, n)
