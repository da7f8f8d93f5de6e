"""This process's writers of one key, one at a time (storage's guaranteed_update).

Writers of one key that run together each compute their update from the same state, and all but one
conflict and compute again: 32 clients patching one object computed each update up to 32 times, and
16 attempts were not enough for most of them. Taking turns, each computes once, starting from the
state the writer before it left (handed over with the turn). Other processes' writes still conflict
and are retried: turns only save work, the revision-guarded txn still decides.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import NamedTuple


class Written(NamedTuple):
    """A key's value as the writer before left it: etcd's bytes and their revision."""

    raw: bytes
    revision: int


class Turns:
    """Per key: whose turn it is, and who waits (a key is here only while someone writes it)."""

    def __init__(self) -> None:
        self._waiting: dict[str, deque[asyncio.Future[Written | None]]] = {}

    async def take(self, key: str, deadline: float) -> Written | None:
        """Wait for the key's turn (TimeoutError at `deadline`, the event loop's clock); the state the writer
        before left, if it said."""
        waiting = self._waiting.get(key)
        if waiting is None:
            self._waiting[key] = deque()
            return None
        turn: asyncio.Future[Written | None] = asyncio.get_running_loop().create_future()
        waiting.append(turn)
        try:
            async with asyncio.timeout_at(deadline):
                return await turn
        except BaseException:
            if turn.done() and not turn.cancelled():  # handed the turn just as it gave up: pass it on
                self.give(key, turn.result())
            else:
                waiting.remove(turn)
            raise

    def wanted(self, key: str) -> bool:
        """Whether a writer waits for the key (then the state left is worth handing over)."""
        return bool(self._waiting.get(key))

    def give(self, key: str, written: Written | None) -> None:
        """End the key's turn: the next writer that still waits gets it, with `written`."""
        waiting = self._waiting[key]
        while waiting:
            turn = waiting.popleft()
            if not turn.done():
                turn.set_result(written)
                return
        del self._waiting[key]
