"""The controller work queue (client-go's `util/workqueue`: plain, delaying and rate-limited in one).

Controllers queue keys, never objects, and reconcile whatever the cache holds
when a worker gets to the key. Two sets make that safe:

- `dirty`: keys that need processing. Adding a key that is already dirty does
  nothing, so a burst of events for one object costs one reconcile.
- `processing`: keys a worker holds. A key added while it is being processed
  stays dirty and is queued again only when its worker calls `done`, so one
  key is never reconciled by two workers at once.

Delayed adds wait in a heap on the injected clock. There is no background task
for them: whoever looks at the queue (`get`, `len`) first moves the keys that
are due, and a waiting `get` sleeps only until the earliest of them.

Unlike client-go, `get` stops handing out keys as soon as the queue shuts
down, even if some are still queued: a stopping controller should finish what
it holds and go, and the next leader relists everything anyway.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from .clock import Clock, RealClock
from .metrics import NoopQueueMetrics, QueueMetrics
from .ratelimit import RateLimiter, default_controller_rate_limiter
from .tasks import spawn

T = TypeVar("T", bound=Hashable)


class ShutDown(Exception):
    """The queue is shutting down: take no more work."""


class WorkQueue(Generic[T]):
    """Deduplicating, delaying, rate-limited queue of keys; one key on at most one worker."""

    def __init__(self, name: str = "", *, clock: Clock | None = None, rate_limiter: RateLimiter | None = None,
                 metrics: QueueMetrics | None = None) -> None:
        self.name = name
        self._clock = clock or RealClock()
        self._limiter = rate_limiter or default_controller_rate_limiter(clock=self._clock)
        self._metrics = metrics or NoopQueueMetrics()
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._queued_at: dict[T, float] = {}
        self._started_at: dict[T, float] = {}
        self._due: dict[T, float] = {}  # delayed keys and when they are due; heap entries not matching are stale
        self._timers: list[tuple[float, int, T]] = []
        self._seq = itertools.count()
        self._getters: list[asyncio.Future[None]] = []
        self._idle = asyncio.Event()
        self._idle.set()
        self._shutting_down = False

    # --- the plain queue ---

    def add(self, item: T) -> None:
        """Mark `item` for processing; a no-op if it already is, or if the queue is shutting down."""
        if not self._shutting_down:
            self._insert(item)

    async def get(self) -> T:
        """The next key to process (wait for one); raises `ShutDown` once the queue shuts down.

        The caller owns the key until it calls `done(key)`.
        """
        while True:
            self._promote_due()
            if self._shutting_down:
                raise ShutDown(self.name)
            if self._queue:
                break
            await self._wait(self._next_due())
        item = self._queue.popleft()
        self._dirty.discard(item)
        self._processing.add(item)
        self._idle.clear()
        now = self._clock.now()
        self._metrics.started(now - self._queued_at.pop(item, now))
        self._started_at[item] = now
        self._metrics.depth(len(self._queue))
        return item

    def done(self, item: T) -> None:
        """The worker is finished with `item`; if it was added meanwhile, queue it again."""
        if item not in self._processing:
            return
        self._processing.discard(item)
        self._metrics.finished(self._clock.now() - self._started_at.pop(item, self._clock.now()))
        if item in self._dirty:
            self._append(item)
        if not self._processing:
            self._idle.set()

    def shut_down(self) -> None:
        """Stop handing out keys and wake every waiting `get` (it raises `ShutDown`); drop delayed keys."""
        self._shutting_down = True
        self._due.clear()
        self._timers.clear()
        self._wake()

    async def shut_down_with_drain(self) -> None:
        """`shut_down`, then wait until every key handed out has been marked `done`."""
        self.shut_down()
        await self._idle.wait()

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    @property
    def in_flight(self) -> int:
        """Keys handed out and not yet `done`."""
        return len(self._processing)

    def __len__(self) -> int:
        """Keys waiting for a worker (not those being processed, nor those delayed into the future)."""
        self._promote_due()
        return len(self._queue)

    # --- the delaying queue ---

    def add_after(self, item: T, delay: float) -> None:
        """Add `item` once `delay` seconds have passed; an earlier pending time for it wins."""
        if self._shutting_down:
            return
        self._metrics.retried()
        if delay <= 0:
            self._insert(item)
            return
        due = self._clock.now() + delay
        known = self._due.get(item)
        if known is not None and known <= due:
            return
        self._due[item] = due
        heapq.heappush(self._timers, (due, next(self._seq), item))
        self._wake()  # a waiting get may now have to wake up sooner

    # --- the rate-limited queue ---

    def add_rate_limited(self, item: T) -> None:
        """Add `item` after the rate limiter's delay: retry with backoff."""
        self.add_after(item, self._limiter.when(item))

    def forget(self, item: T) -> None:
        """`item` succeeded: its next failure starts the backoff over."""
        self._limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self._limiter.num_requeues(item)

    # --- internals ---

    def _insert(self, item: T) -> None:
        if item in self._dirty:
            return
        self._metrics.added()
        self._dirty.add(item)
        self._queued_at.setdefault(item, self._clock.now())
        if item not in self._processing:
            self._append(item)

    def _append(self, item: T) -> None:
        self._queue.append(item)
        self._metrics.depth(len(self._queue))
        self._wake()

    def _promote_due(self) -> None:
        now = self._clock.now()
        while self._timers and self._timers[0][0] <= now:
            due, _, item = heapq.heappop(self._timers)
            if self._due.get(item) == due:
                del self._due[item]
                self._insert(item)

    def _next_due(self) -> float | None:
        while self._timers and self._due.get(self._timers[0][2]) != self._timers[0][0]:
            heapq.heappop(self._timers)  # stale: the key was rescheduled earlier
        return self._timers[0][0] if self._timers else None

    async def _wait(self, due: float | None) -> None:
        """Sleep until something is added, the queue shuts down, or `due` (on the clock) arrives."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._getters.append(waiter)
        timer = None
        if due is not None:
            timer = spawn(self._sleep_until(due), name=f"workqueue:{self.name}:timer")
            timer.add_done_callback(lambda _: _resolve(waiter))
        try:
            await waiter
        finally:
            self._getters.remove(waiter)
            if timer is not None:
                timer.cancel()

    async def _sleep_until(self, due: float) -> None:
        await self._clock.sleep(due - self._clock.now())

    def _wake(self) -> None:
        for waiter in self._getters:
            _resolve(waiter)


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
