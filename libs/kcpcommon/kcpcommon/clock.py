"""An injectable clock (client-go's `k8s.io/utils/clock`).

Work queues, rate limiters and leader election reason about time. Tests of
backoff that grows to minutes cannot wait for minutes, so these parts take a
`Clock` and tests hand them a `FakeClock`, whose time moves only when the test
says so.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Protocol


class Clock(Protocol):
    """Monotonic seconds, and a way to wait for them to pass."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    """The process's monotonic clock and the event loop's timers."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """Time stands still until `advance()`; sleepers whose deadline it passes wake in deadline order.

    `advance` is synchronous: it resolves the sleepers' futures, and the woken
    tasks run at the test's next `await` (e.g. `await asyncio.sleep(0)`).
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), waiter))
        await waiter  # a cancelled sleeper's future is cancelled too, and skipped by advance()

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline is now reached."""
        if seconds < 0:
            raise ValueError("time does not go backwards")
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, waiter = heapq.heappop(self._sleepers)
            if not waiter.done():
                waiter.set_result(None)

    def sleepers(self) -> int:
        """How many tasks are sleeping on this clock (tests wait for a task to go to sleep)."""
        return sum(1 for _, _, waiter in self._sleepers if not waiter.done())

    def next_deadline(self) -> float | None:
        """When the earliest sleeper wakes, if any sleeps."""
        pending = [deadline for deadline, _, waiter in self._sleepers if not waiter.done()]
        return min(pending) if pending else None
