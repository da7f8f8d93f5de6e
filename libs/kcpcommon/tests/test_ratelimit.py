"""Rate limiters: per-item exponential backoff, an overall token bucket, and the larger of both."""

from __future__ import annotations

import pytest

from kcpcommon.clock import FakeClock
from kcpcommon.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)


def test_item_backoff_doubles_from_5ms_per_failure() -> None:
    limiter = ItemExponentialFailureRateLimiter()
    assert [limiter.when("a") for _ in range(5)] == pytest.approx([0.005, 0.01, 0.02, 0.04, 0.08])
    assert limiter.num_requeues("a") == 5
    assert limiter.when("b") == pytest.approx(0.005)  # items back off independently


def test_item_backoff_is_capped_and_never_overflows() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000)
    delays = [limiter.when("a") for _ in range(2000)]
    assert max(delays) == 1000 and delays[-1] == 1000
    assert delays[17] == pytest.approx(655.36) and delays[18] == 1000


def test_forgetting_an_item_starts_its_backoff_over() -> None:
    limiter = ItemExponentialFailureRateLimiter(1, 60)
    limiter.when("a")
    limiter.when("a")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 1


def test_bucket_allows_a_burst_then_spaces_retries_at_qps() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10, burst=3, clock=clock)
    assert [limiter.when(i) for i in range(3)] == [0, 0, 0]
    assert [limiter.when(i) for i in range(3, 6)] == pytest.approx([0.1, 0.2, 0.3])
    clock.advance(1.0)  # refills at 10/s up to the burst
    assert [limiter.when(i) for i in range(3)] == pytest.approx([0, 0, 0])
    assert limiter.num_requeues(0) == 0


def test_max_of_takes_the_longest_delay_and_every_limiter_counts() -> None:
    clock = FakeClock()
    items = ItemExponentialFailureRateLimiter(0.005, 1000)
    bucket = BucketRateLimiter(qps=1, burst=1, clock=clock)
    limiter = MaxOfRateLimiter(items, bucket)
    assert limiter.when("a") == pytest.approx(0.005)  # bucket: first token is free
    assert limiter.when("a") == pytest.approx(1.0)  # bucket: next token in 1 s > 10 ms
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_default_controller_limiter_is_5ms_exponential_under_a_10qps_bucket() -> None:
    limiter = default_controller_rate_limiter(clock=FakeClock())
    assert limiter.when("a") == pytest.approx(0.005)
    delays = [limiter.when(i) for i in range(200)]
    assert delays[:99] == pytest.approx([0.005] * 99)  # the rest of the burst of 100
    assert delays[99] == pytest.approx(0.1) and delays[-1] == pytest.approx(10.1)  # then 10 a second
