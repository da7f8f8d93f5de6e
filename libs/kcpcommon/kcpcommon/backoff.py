"""Exponential backoff with jitter that forgets old failures (client-go's backoff manager).

Loops that talk to the API retry forever, so each retry waits longer
(0.8 s doubling to 30 s by default) and jitter spreads many clients apart after
a shared outage, instead of having them all reconnect in the same instant.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable


class Backoff:
    """Delays for successive failures; a quiet spell of `reset_after` seconds starts over."""

    def __init__(self, *, initial: float = 0.8, cap: float = 30.0, factor: float = 2.0, jitter: float = 1.0,
                 reset_after: float = 120.0, rng: random.Random | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self._rng = rng or random.Random()
        self._clock = clock
        self._next = initial
        self._last: float | None = None

    def next(self) -> float:
        """The delay before the next attempt; each call counts as one more failure."""
        now = self._clock()
        if self._last is not None and now - self._last > self.reset_after:
            self._next = self.initial
        self._last = now
        base = self._next
        self._next = min(self.cap, self._next * self.factor)
        return min(self.cap, base * (1.0 + self.jitter * self._rng.random()))

    def reset(self) -> None:
        """Forget past failures."""
        self._next = self.initial
        self._last = None
