"""When the watch cache writes a batch: at once when flushing has kept to its share of the loop (low rates pay
no batching delay), otherwise when the last flush's share allows, gathering what arrives meanwhile."""

from __future__ import annotations

import pytest

from kcp_apiserver.storage.watchcache import FLUSH_INTERVAL, FLUSH_INTERVAL_MAX, flush_delay, flush_interval


@pytest.mark.parametrize(("since_last_flush", "interval", "delay"), [
    (3600.0, FLUSH_INTERVAL, 0.0),  # a lone change after a quiet spell
    (0.05, 0.04, 0.0),  # 20 writes/s to 1,000 watchers (a flush of ~10 ms): every event goes out at once
    (0.06, FLUSH_INTERVAL_MAX, 0.04),  # a costly last flush: wait only for the rest of its share, not all of it
    (0.0, FLUSH_INTERVAL, FLUSH_INTERVAL),  # a flush just ended: this event starts the next batch
])
def test_a_batch_waits_only_for_what_is_left_of_the_last_flushs_share(since_last_flush: float, interval: float,
                                                                     delay: float) -> None:
    now = 1000.0
    assert flush_delay(now, now - since_last_flush, interval) == pytest.approx(delay)


@pytest.mark.parametrize("cost", [0.010, 0.013, 0.016])  # a flush to 1,000 TLS watchers, on a quiet or busy machine
def test_20_writes_per_second_to_1000_watchers_are_not_batched(cost: float) -> None:
    now = 1000.0
    last_flush = now - (0.05 - cost)  # the last event came 50 ms ago and was flushed at once
    assert flush_delay(now, last_flush, flush_interval(cost)) == 0.0


@pytest.mark.parametrize("cost", [0.010, 0.013, 0.016])
def test_200_writes_per_second_to_1000_watchers_are_still_batched(cost: float) -> None:
    now = 1000.0
    last_flush = now - 0.005  # an event 5 ms after the last flush ended starts a batch that waits for more
    assert flush_delay(now, last_flush, flush_interval(cost)) > 0.0
