"""Which resources a logical cluster serves, and their watch caches."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from etcd3aio import Etcd3Client

from .resources import Resource
from .storage import Storage
from .watchcache import WatchCache


class Catalog:
    """Resources by (group, version, plural); the built-ins are served in every logical cluster."""

    def __init__(self, builtins: Iterable[Resource]) -> None:
        self.builtins = tuple(builtins)
        self._index = {(r.group, r.version, r.plural): r for r in self.builtins}

    def lookup(self, cluster: str, group: str, version: str, plural: str) -> Resource | None:
        return self._index.get((group, version, plural))

    def for_cluster(self, cluster: str) -> list[Resource]:
        return list(self.builtins)

    def namespaced(self, cluster: str) -> list[Resource]:
        """One resource per storage prefix: what a namespace can hold."""
        seen: dict[str, Resource] = {}
        for res in self.for_cluster(cluster):
            if res.namespaced:
                seen.setdefault(res.prefix, res)
        return list(seen.values())


class WatchCaches:
    """One WatchCache per storage prefix, created on first use."""

    def __init__(self, client: Etcd3Client, storage: Storage, *, capacity: int) -> None:
        self.client = client
        self.storage = storage
        self.capacity = capacity
        self.caches: dict[str, WatchCache] = {}
        self._starting: dict[str, asyncio.Task[WatchCache]] = {}

    async def get(self, res: Resource) -> WatchCache:
        cache = self.caches.get(res.prefix)
        if cache is not None:
            return cache
        task = self._starting.get(res.prefix)
        if task is None:
            task = asyncio.create_task(self._start(res), name=f"watchcache-start:{res.prefix}")
            self._starting[res.prefix] = task
        return await asyncio.shield(task)

    async def _start(self, res: Resource) -> WatchCache:
        cache = WatchCache(self.client, self.storage, res.prefix, res.namespaced, capacity=self.capacity)
        await cache.start()
        self.caches[res.prefix] = cache
        self._starting.pop(res.prefix, None)
        return cache

    def watcher_count(self) -> int:
        return sum(len(c.watchers) for c in self.caches.values())

    async def stop(self) -> None:
        for cache in self.caches.values():
            await cache.stop()
