"""The client-side token bucket and the reflector's backoff, on a fake clock."""

from __future__ import annotations

import random

from kcpcommon.backoff import Backoff
from kcpcommon.flowcontrol import TokenBucket


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_allows_a_burst_then_spaces_requests_at_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(10, 3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0, 0, 0]
    assert [round(bucket.reserve(), 3) for _ in range(2)] == [0.1, 0.2]  # queued in arrival order
    clock.now += 1.0
    assert bucket.reserve() == 0  # refilled (up to the burst), minus the two reserved


def test_zero_qps_means_unlimited() -> None:
    bucket = TokenBucket(0, 0)
    assert all(bucket.reserve() == 0 for _ in range(1000))


def test_backoff_doubles_with_jitter_up_to_the_cap() -> None:
    backoff = Backoff(initial=0.8, cap=30.0, rng=random.Random(1), clock=FakeClock())
    delays = [backoff.next() for _ in range(10)]
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0, 30.0]
    assert all(base <= d <= min(30.0, 2 * base) for d, base in zip(delays, bases, strict=True))
    assert delays[-1] == 30.0


def test_backoff_starts_over_after_a_quiet_spell() -> None:
    clock = FakeClock()
    backoff = Backoff(initial=1.0, cap=30.0, jitter=0.0, reset_after=120.0, clock=clock)
    assert [backoff.next() for _ in range(4)] == [1.0, 2.0, 4.0, 8.0]
    clock.now += 121
    assert backoff.next() == 1.0
