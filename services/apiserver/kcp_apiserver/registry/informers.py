"""The server's in-process informers: one per resource, fed by its watch cache, shared by every consumer.

The namespace, service-account, garbage-collection and CRD controllers, the RBAC index and the
NamespaceLifecycle admission plugin all want "every object of this resource, then every change".
Each gets it as a handler on kcpcommon's `SharedCache` (the same handler API, indexers and frozen
objects as the daemons' informers), and one informer per resource feeds them all from one watcher.

The feed lists the cache's own state and subscribes in one step (no await between), so it continues
exactly where the list ends. When the watcher closes (a cache reset after etcd compaction, or the feed
fell behind) it lists again; `replace` reports what changed meanwhile, and what vanished as a
`DeletedFinalStateUnknown` tombstone, so a handler never misses a state and needs no reset of its own.

The indexer keeps the watch cache's `Cached` (etcd's bytes, shared with the cache's state) rather than
a decoded copy, and decodes on read: following every resource of every logical cluster (the garbage
collector does) then costs a reference per object, not a second copy of the whole store. A consumer
that reads the cache all the time (the simulator's scheduler and controllers look up pods by node and
owner on every event) asks for `keep_decoded`: the informer then holds frozen objects, decoded once, and
an update shares with the state it replaces whatever did not change (`kcpcommon.frozen.freeze_like`).

Every object handed out is `Located`: it knows its key (from etcd's), so a consumer reads its logical
cluster from there (`kcpcommon.keys.cluster_of`), with or without the `kcp.io/cluster` annotation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any, cast

import structlog

from kcp_apiserver.registry.catalog import WatchCaches
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.storage.cachestate import Cached
from kcp_apiserver.storage.keys import ObjectKey, parse_key
from kcp_apiserver.storage.watchcache import DELETED, WatchCache, Watcher
from kcpcommon.keys import key_for, located
from kcpcommon.sharedcache import DeletedFinalStateUnknown, HandlerRegistration, SharedCache, deleted_object
from kcpcommon.tasks import cancel_and_wait, spawn, supervise

log = structlog.get_logger("informers")

__all__ = ["Informers", "Observe", "WatchCacheInformer", "add_observer"]

Observe = Callable[[Obj, bool], None]  # (the object's state, whether that is its final one)


def _load(stored: tuple[ObjectKey, Cached]) -> Any:
    key, cached = stored
    return located(cached.decode(), key)


class WatchCacheInformer(SharedCache):
    """One resource across every logical cluster, fed by its watch cache; `run()` until cancelled."""

    def __init__(self, cache: WatchCache, *, name: str) -> None:
        # keys come from etcd's keys; the default indexes (labels, namespaces) would cost memory nobody reads
        super().__init__(name, key_for, with_default_indexers=False, load=_load)
        self.cache = cache
        self.decoded = False

    def keep_decoded(self) -> None:
        """Hold decoded (frozen) objects from now on, not the cache's bytes: reads cost nothing more."""
        if not self.decoded:
            self.decoded = True
            self.indexer.keep_loaded()

    async def run(self) -> None:
        self.start_handlers()
        try:
            await supervise(self._follow, name=self.name)
        finally:
            await self.stop_handlers()

    async def _follow(self) -> None:
        watcher = await self._resync()
        try:
            while (item := await watcher.queue.get()) is not None:
                type_, event = item
                key, raw = event.key, event.raw
                if type_ == DELETED:
                    self.apply(DELETED, located(event.obj, key), key=key)
                elif self.decoded:  # the old state is at hand: what did not change is shared, not frozen again
                    self.apply(type_, located(event.obj, key, previous=self.indexer.get(key)), key=key)
                else:
                    self.apply(type_, located(event.obj, key), key=key, stored=(key, Cached(raw, event.revision)))
                event.compact()  # the cache's window must not keep what this informer decoded
            log.info("informer relisting", informer=self.name, reason=watcher.close_reason or "watch closed")
        finally:
            watcher.close()

    async def _resync(self) -> Watcher:
        """The cache's state into the informer, subscribed from exactly where it ends."""
        cache = self.cache
        await cache.ready.wait()
        entries, revision = cache.snapshot(cache.prefix)
        watcher = cache.subscribe(cluster=None, namespace=None, name=None, matches=None, after_revision=revision)

        def decoded() -> Iterator[tuple[ObjectKey, dict[str, Any], tuple[ObjectKey, Cached] | None]]:
            for etcd_key, cached in entries:
                key = parse_key(cache.prefix, etcd_key, cache.namespaced)
                yield key, located(cached.decode(), key), None if self.decoded else (key, cached)

        self.replace_entries(decoded(), str(revision))
        return watcher


def add_observer(informer: SharedCache, observe: Observe, *, name: str, inline: bool = False) -> HandlerRegistration:
    """A handler for a consumer that folds every state into its own index (the RBAC index, the CRD catalog,
    the garbage collector's graph): `observe(obj, deleted)`, a tombstone's last known state as a deletion.
    It never reads an update's old state, so an update decodes none for it (`needs_old=False`).
    `inline`: called by the feeder as the cache changes (see `SharedCache.add_handler`)."""

    def gone(obj: Obj | DeletedFinalStateUnknown) -> None:
        observe(cast(Obj, deleted_object(obj)), True)  # frozen dicts are dicts

    return informer.add_handler(on_add=lambda obj: observe(obj, False), on_update=lambda _, obj: observe(obj, False),
                                on_delete=gone, name=name, inline=inline, needs_old=False)


class Informers:
    """The informer of each resource, created and started on first request (the server's informer factory)."""

    def __init__(self, caches: WatchCaches) -> None:
        self.caches = caches
        self._informers: dict[str, WatchCacheInformer] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    async def get(self, res: Resource) -> WatchCacheInformer:
        """The shared informer of `res` (it starts listing at once; `wait_for_sync` for the first list)."""
        informer = self._informers.get(res.prefix)
        if informer is None:
            cache = await self.caches.get(res)
            informer = self._informers.get(res.prefix)  # another caller may have made it meanwhile
            if informer is None:
                informer = WatchCacheInformer(cache, name=f"informer:{res.prefix}")
                self._informers[res.prefix] = informer
                self._tasks[res.prefix] = spawn(informer.run(), name=informer.name)
        return informer

    async def stop(self) -> None:
        tasks, self._tasks = list(self._tasks.values()), {}
        self._informers.clear()
        await cancel_and_wait(*tasks)
