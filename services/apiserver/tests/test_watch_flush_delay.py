"""When the watch cache writes a batch: at once when flushing has kept to its share of the loop (low rates pay
no batching delay), otherwise when the last flush's share allows, gathering what arrives meanwhile."""

from __future__ import annotations

import pytest

from kcp_apiserver.storage.watchcache import FLUSH_INTERVAL, FLUSH_INTERVAL_MAX, flush_delay


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
