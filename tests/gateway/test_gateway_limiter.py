"""The upstream concurrency limit: halve under rate limiting, recover slowly."""

from __future__ import annotations

from contextlib import ExitStack

from pytest_sabot.gateway.limiter import AdaptiveLimit


def test_a_burst_of_concurrent_429s_halves_the_limit_once() -> None:
    limit = AdaptiveLimit(8)
    with ExitStack() as stack:
        generations = [stack.enter_context(limit.slot()) for _ in range(4)]
        for generation in generations:
            limit.rate_limited(generation)
    assert limit.limit == 4


def test_a_retry_rate_limited_again_halves_again_down_to_one() -> None:
    limit = AdaptiveLimit(8)
    for _ in range(5):
        with limit.slot() as generation:
            limit.rate_limited(generation)
    assert limit.limit == 1


def test_limit_grows_by_one_per_run_of_successes_up_to_the_maximum() -> None:
    limit = AdaptiveLimit(4, recover_after=3)
    with limit.slot() as generation:
        limit.rate_limited(generation)
    assert limit.limit == 2
    for _ in range(5):
        limit.succeeded()
    assert limit.limit == 3
    for _ in range(30):
        limit.succeeded()
    assert limit.limit == 4
