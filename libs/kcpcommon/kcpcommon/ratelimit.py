"""How long a failed work item waits before its retry (client-go's `workqueue` rate limiters).

A key that keeps failing must back off per item (so one broken object does not
spin a worker), and the queue as a whole must not retry faster than the API
can take (so an outage does not turn into a storm of retries when it ends).
The default limiter is the larger of both delays, as in client-go.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from .clock import Clock, RealClock
from .flowcontrol import TokenBucket

# 2**_MAX_EXPONENT is still a float; beyond it every delay is the cap anyway
_MAX_EXPONENT = 1000


class RateLimiter(Protocol):
    """`when` is called once per retry of `item` and returns its delay in seconds."""

    def when(self, item: Hashable) -> float: ...

    def forget(self, item: Hashable) -> None: ...

    def num_requeues(self, item: Hashable) -> int: ...


class ItemExponentialFailureRateLimiter:
    """`base * 2**failures`, capped at `max`; `forget` starts the item over."""

    def __init__(self, base: float = 0.005, max: float = 1000.0) -> None:  # client-go's parameter names
        if base <= 0 or max < base:
            raise ValueError("need 0 < base <= max")
        self.base = base
        self.max = max
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exponent = self._failures.get(item, 0)
        self._failures[item] = exponent + 1
        if exponent >= _MAX_EXPONENT:
            return self.max
        return min(self.max, self.base * 2.0 ** exponent)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """One token bucket for all items: `qps` retries a second overall, bursts of `burst`."""

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        if qps <= 0:
            raise ValueError("qps must be positive")
        self._bucket = TokenBucket(qps, burst, clock=(clock or RealClock()).now)

    def when(self, item: Hashable) -> float:
        return self._bucket.reserve()

    def forget(self, item: Hashable) -> None:
        """Tokens are not per item: nothing to forget."""

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest delay of several limiters (each one still counts the retry)."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("need at least one rate limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max([limiter.when(item) for limiter in self.limiters])  # a list: every limiter must see it

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> MaxOfRateLimiter:
    """client-go's default: per item 5 ms doubling to 1000 s, overall 10 qps with bursts of 100."""
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 1000.0),
                            BucketRateLimiter(10.0, 100, clock=clock))
