"""The watch cache's current state: every object of one resource, as etcd's bytes.

Tens of thousands of objects live here, so it holds bytes and a revision per key, never dicts:
readers decode what they serve. Keys are kept in etcd's (sorted) order, so a scoped read is a
bisect and a short scan, and lists come out in the order an etcd range gives.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import NamedTuple

from kcp_apiserver.storage.etcd import decode


class Cached(NamedTuple):
    """One object: etcd's value and its mod_revision (the object's resourceVersion)."""

    raw: bytes
    revision: int

    def decode(self) -> dict:  # type: ignore[type-arg]
        return decode(self.raw, self.revision)


class CacheState:
    """key -> Cached, with sorted prefix scans.

    New keys are appended to the key list and sorted on the next scan (timsort merges the sorted
    run and the short tail cheaply); deleted keys stay in the list until they outnumber the live
    ones, and scans skip them.
    """

    def __init__(self, items: Iterable[tuple[str, Cached]] = ()) -> None:
        self.items: dict[str, Cached] = dict(items)
        self._keys: list[str] = sorted(self.items)
        self._unsorted = False
        self._gone: set[str] = set()  # deleted keys still in _keys

    def __len__(self) -> int:
        return len(self.items)

    def get(self, key: str) -> Cached | None:
        return self.items.get(key)

    def put(self, key: str, value: Cached) -> None:
        if key not in self.items:
            if key in self._gone:
                self._gone.discard(key)  # still in _keys
            else:
                self._keys.append(key)
                self._unsorted = True
        self.items[key] = value

    def delete(self, key: str) -> None:
        if self.items.pop(key, None) is None:
            return
        self._gone.add(key)
        if len(self._gone) > max(len(self.items), 1024):
            self._keys = [k for k in self._keys if k in self.items]
            self._gone.clear()

    def count_hint(self, prefix: str) -> int:
        """About how many keys are under prefix (deleted keys not yet dropped count too): O(log n)."""
        self._sort()
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else ""
        keys = self._keys
        return (bisect.bisect_left(keys, end) if end else len(keys)) - bisect.bisect_left(keys, prefix)

    def _sort(self) -> None:
        if self._unsorted:
            self._keys.sort()
            self._unsorted = False

    def scan(self, prefix: str) -> list[tuple[str, Cached]]:
        """Every (key, value) under prefix, in key order; a list, so later changes do not show."""
        self._sort()
        keys, items = self._keys, self.items
        out = []
        for i in range(bisect.bisect_left(keys, prefix), len(keys)):
            key = keys[i]
            if not key.startswith(prefix):
                break
            value = items.get(key)
            if value is not None:
                out.append((key, value))
        return out
