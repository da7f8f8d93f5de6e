"""Controller expectations (kube's ControllerExpectations): what a controller is still waiting to see.

After creating N pods the informer may not show them yet; a second sync that trusted it would create
them again. So a sync records how many creations and which deletions it expects, the informer's
handlers count them off, and the next sync changes replicas only once all have been seen (or
`TTL` passed: a lost event must not wedge a controller for ever).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from kcpcommon.keys import ObjectKey

TTL = 300.0  # kube's ExpectationsTimeout


@dataclass
class Expected:
    adds: int = 0
    deletes: set[ObjectKey] = field(default_factory=set)
    at: float = field(default_factory=time.monotonic)


class Expectations:
    def __init__(self) -> None:
        self._items: dict[ObjectKey, Expected] = {}

    def satisfied(self, owner: ObjectKey) -> bool:
        item = self._items.get(owner)
        if item is None:
            return True
        if (item.adds <= 0 and not item.deletes) or time.monotonic() - item.at > TTL:
            del self._items[owner]
            return True
        return False

    def expect(self, owner: ObjectKey, *, adds: int = 0, deletes: set[ObjectKey] | None = None) -> None:
        self._items[owner] = Expected(adds, set(deletes or ()))

    def created(self, owner: ObjectKey) -> None:
        """A creation was observed (or failed and will never be)."""
        item = self._items.get(owner)
        if item is not None:
            item.adds -= 1

    def deleted(self, owner: ObjectKey, pod: ObjectKey) -> None:
        item = self._items.get(owner)
        if item is not None:
            item.deletes.discard(pod)

    def forget(self, owner: ObjectKey) -> None:
        self._items.pop(owner, None)
