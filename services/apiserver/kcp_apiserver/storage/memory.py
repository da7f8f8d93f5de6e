"""Storage in memory, with etcd's revision semantics: for unit tests of the layers above,
where a real etcd adds nothing but time. End-to-end tests keep the real one."""

from __future__ import annotations

import bisect
from typing import Any

from kcp_apiserver.storage.etcd import (
    Compacted,
    KeyExists,
    KeyNotFound,
    RevisionConflict,
    Storage,
    Stored,
    decode,
    encode,
)
from kcp_apiserver.storage.turns import Turns


class MemoryStorage(Storage):
    """`Storage` over a dict; every write takes the next revision, as one etcd member does.

    It overrides the primitives only; what is built on them (`guaranteed_update`) is Storage's own."""

    def __init__(self) -> None:  # no etcd client: every primitive is overridden

        self.revision = 1
        self.recent: dict[str, int] = {}
        self.turns = Turns()
        self.compacted = 0
        self._data: dict[str, tuple[bytes, int]] = {}  # key -> (value, mod_revision)
        self._keys: list[str] = []  # sorted, for range reads

    def _put(self, key: str, obj: dict[str, Any]) -> Stored:
        self.revision += 1
        value = encode(obj)
        if key not in self._data:
            bisect.insort(self._keys, key)
        self._data[key] = (value, self.revision)
        self._saw(key, self.revision)
        return Stored(key, decode(value, self.revision), self.revision)

    def _stored(self, key: str) -> Stored:
        value, rev = self._data[key]
        return Stored(key, decode(value, rev), rev)

    def _seen(self, key: str) -> Stored:
        """The current state a failed write reports, as etcd's txn does."""
        current = self._stored(key)
        self._saw(key, current.mod_revision)
        return current

    async def get(self, key: str) -> Stored:
        if key not in self._data:
            raise KeyNotFound(key)
        return self._stored(key)

    async def exists(self, key: str) -> bool:
        return key in self._data

    async def current_revision(self) -> int:
        return self.revision

    async def create(self, key: str, obj: dict[str, Any]) -> Stored:
        if key in self._data:
            raise KeyExists(key)
        return self._put(key, obj)

    async def create_many(self, items: list[tuple[str, dict[str, Any]]]) -> bool:
        if any(key in self._data for key, _ in items):
            return False
        for key, obj in items:
            self._put(key, obj)
        return True

    async def update(self, key: str, obj: dict[str, Any], expected_revision: int) -> Stored:
        if key not in self._data:
            if expected_revision == 0:  # etcd's compare: an absent key's mod_revision is 0
                return self._put(key, obj)
            raise KeyNotFound(key)
        if self._data[key][1] != expected_revision:
            raise RevisionConflict(key, self._seen(key))
        return self._put(key, obj)

    async def delete(self, key: str, expected_revision: int) -> int:
        if key not in self._data:
            raise KeyNotFound(key)
        if self._data[key][1] != expected_revision:
            raise RevisionConflict(key, self._seen(key))
        del self._data[key]
        self._keys.remove(key)
        self.revision += 1
        self._saw(key, self.revision)
        return self.revision

    async def list(self, prefix: str, *, revision: int = 0, limit: int = 0,
                   start_key: str | None = None) -> tuple[list[Stored], int, bool]:
        """Only the current revision is kept: an older one reads as compacted."""
        if revision and revision < self.revision:
            raise Compacted(f"required revision {revision} is not the current one in memory")
        start = bisect.bisect_left(self._keys, start_key or prefix)
        items: list[Stored] = []
        for key in self._keys[start:]:
            if not key.startswith(prefix):
                break
            if limit and len(items) == limit:
                return items, self.revision, True
            items.append(await self.get(key))
        return items, self.revision, False

    async def count(self, prefix: str) -> int:
        return sum(1 for key in self._keys if key.startswith(prefix))

    async def compact(self, revision: int) -> None:
        self.compacted = max(self.compacted, revision)
