"""Client-side throttling of API requests (client-go's `util/flowcontrol` token bucket).

A controller that misbehaves (a hot loop, a relist storm) must not take the
API server down with it; every request a `ClientFactory` client sends first
takes a token from one bucket shared by all logical clusters.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class TokenBucket:
    """`qps` tokens a second, at most `burst` saved up; `qps <= 0` means unlimited.

    Waiters are served in arrival order: `acquire` reserves its token at once
    (the balance may go negative) and then sleeps until that token is due, so
    no lock is needed and a burst of callers cannot starve an earlier one.
    """

    def __init__(self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if qps > 0 and burst < 1:
            raise ValueError("burst must be at least 1 when qps is limited")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._updated = clock()

    def reserve(self) -> float:
        """Take one token; returns how long to wait before using it (0 = now)."""
        if self.qps <= 0:
            return 0.0
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._updated) * self.qps)
        self._updated = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> None:
        """Wait for a token."""
        delay = self.reserve()
        if delay > 0:
            try:
                await asyncio.sleep(delay)
            except asyncio.CancelledError:
                self._tokens += 1.0  # hand the unused reservation back
                raise
