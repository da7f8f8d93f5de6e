"""Writes the informer cache has not shown yet (client-go's ControllerExpectations, by resourceVersion).

After the splitter creates, updates or deletes a child, or writes a root's status, a reconcile of
the same root that ran on the cache from before that write would decide again from stale state (a
second create, a second Event). So each write is remembered until the cache holds that
resourceVersion or newer (kcp's resourceVersion is etcd's revision, a number), or, after a delete,
the object gone or terminating (a finalizer may hold it); the root waits until then. An expectation that the cache never meets (the
object changed again, by someone else, before the watch showed ours) expires after `ttl` seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcpcommon.keys import ObjectKey

Lookup = Callable[[ObjectKey], Mapping[str, Any] | None]


@dataclass
class _Pending:
    at: float
    objects: dict[ObjectKey, str | None] = field(default_factory=dict)  # None: deleted (with this uid gone)
    deleted_uids: dict[ObjectKey, str] = field(default_factory=dict)


def _rv(obj: Mapping[str, Any] | None) -> int:
    try:
        return int((obj or {}).get("metadata", {}).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


class Expectations:
    def __init__(self, *, ttl: float, clock: Callable[[], float]) -> None:
        self.ttl = ttl
        self._clock = clock
        self._pending: dict[ObjectKey, _Pending] = {}

    def wrote(self, root: ObjectKey, key: ObjectKey, written: Mapping[str, Any]) -> None:
        pending = self._pending.setdefault(root, _Pending(self._clock()))
        pending.at = self._clock()
        pending.objects[key] = str(_rv(written))
        pending.deleted_uids.pop(key, None)

    def deleted(self, root: ObjectKey, key: ObjectKey, uid: str) -> None:
        pending = self._pending.setdefault(root, _Pending(self._clock()))
        pending.at = self._clock()
        pending.objects[key] = None
        pending.deleted_uids[key] = uid

    def waiting(self, root: ObjectKey, lookup: Lookup) -> float | None:
        """Seconds left to wait for the cache to show this root's writes (None: it shows them all)."""
        pending = self._pending.get(root)
        if pending is None:
            return None
        left = self.ttl - (self._clock() - pending.at)
        if left <= 0:
            del self._pending[root]
            return None
        for key, rv in list(pending.objects.items()):
            cached = lookup(key)
            if rv is None:
                meta = (cached or {}).get("metadata") or {}
                met = cached is None or meta.get("uid") != pending.deleted_uids.get(key) or bool(
                    meta.get("deletionTimestamp"))
            else:
                met = cached is not None and _rv(cached) >= int(rv)
            if met:
                del pending.objects[key]
        if not pending.objects:
            del self._pending[root]
            return None
        return left

    def forget(self, root: ObjectKey) -> None:
        self._pending.pop(root, None)
