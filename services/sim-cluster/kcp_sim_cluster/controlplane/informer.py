"""In-process shared informers: one follower of the watch cache per resource, one store, many handlers.

The simulated control plane lives inside the API server, so it reads the watch caches directly
instead of listing and watching over HTTP. Every controller of the control plane shares one
informer per resource (client-go's shared informer factory): 10,000 pods are decoded and held
once, not once per controller. Only the simulated logical clusters' objects are kept.

Objects in the store are shared with the watch cache's events and with every controller: never
mutate them; copy what you change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

import structlog

from kcp_apiserver.embedding import DELETED, Follower, Resource, Storage, WatchCaches
from kcp_sim_cluster.controlplane.objects import Obj
from kcpcommon.keys import CLUSTER_ANNOTATION, ObjectKey
from kcpcommon.tasks import cancel_and_wait, spawn, supervise

log = structlog.get_logger("sim.informer")

# (old, new): old None on add, new None on delete
Handler = Callable[[Obj | None, Obj | None], None]
IndexFunc = Callable[[Obj], Iterable[str]]


def cluster_of(obj: Obj) -> str:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(CLUSTER_ANNOTATION, "")


def key_of(obj: Obj) -> ObjectKey:
    meta = obj["metadata"]
    return ObjectKey(cluster_of(obj), meta.get("namespace", ""), meta["name"])


def controller_uid(obj: Obj) -> str:
    """The uid of the object's controlling owner ("" when it has none)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid", ""))
    return ""


class Informer:
    """The simulated clusters' objects of one resource, kept current, with indexes and handlers."""

    def __init__(self, storage: Storage, caches: WatchCaches, res: Resource, clusters: frozenset[str]) -> None:
        self.storage = storage
        self.caches = caches
        self.res = res
        self.clusters = clusters  # empty: every logical cluster
        self.store: dict[ObjectKey, Obj] = {}
        self.handlers: list[Handler] = []
        self._index_funcs: dict[str, IndexFunc] = {}
        self._indexes: dict[str, dict[str, dict[ObjectKey, None]]] = {}
        self.synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # -- wiring ------------------------------------------------------------------------------

    def add_handler(self, handler: Handler) -> None:
        self.handlers.append(handler)

    def add_index(self, name: str, func: IndexFunc) -> None:
        if name in self._index_funcs:
            return
        self._index_funcs[name] = func
        index: dict[str, dict[ObjectKey, None]] = {}
        for key, obj in self.store.items():
            for value in func(obj):
                index.setdefault(value, {})[key] = None
        self._indexes[name] = index

    async def start(self) -> None:
        self._task = spawn(supervise(self._follow, name=f"sim:informer:{self.res.plural}"),
                           name=f"sim:informer:{self.res.plural}")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)

    # -- reads -------------------------------------------------------------------------------

    def get(self, key: ObjectKey) -> Obj | None:
        return self.store.get(key)

    def by_index(self, name: str, value: str) -> list[Obj]:
        keys = self._indexes[name].get(value)
        return [self.store[k] for k in keys] if keys else []

    def keys_by_index(self, name: str, value: str) -> list[ObjectKey]:
        keys = self._indexes[name].get(value)
        return list(keys) if keys else []

    def in_cluster(self, cluster: str) -> list[Obj]:
        return self.by_index("cluster", cluster)

    # -- feeding -----------------------------------------------------------------------------

    async def _follow(self) -> None:
        cache = await self.caches.get(self.res)
        seen: set[ObjectKey] = set()

        def observe(obj: Obj, deleted: bool) -> None:
            if not self.clusters or cluster_of(obj) in self.clusters:
                seen.add(key_of(obj))
                self._apply(obj, deleted)

        follower = Follower(self.storage, cache, observe=observe, reset=seen.clear,
                            name=f"sim:{self.res.plural}")
        while True:
            watcher = await follower.resync()
            for key in [k for k in self.store if k not in seen]:  # gone while we were not looking
                self._apply(self.store[key], True)
            seen.clear()
            self.synced.set()
            try:
                while (item := await watcher.queue.get()) is not None:
                    type_, event = item
                    obj = event.obj
                    if not self.clusters or cluster_of(obj) in self.clusters:
                        self._apply(obj, type_ == DELETED)
                    event.compact()
            finally:
                watcher.close()

    def _apply(self, obj: Obj, deleted: bool) -> None:
        key = key_of(obj)
        old = self.store.get(key)
        if deleted:
            if old is None:
                return
            del self.store[key]
            self._unindex(key, old)
            new = None
        else:
            if old is not None:
                if old["metadata"].get("resourceVersion") == obj["metadata"].get("resourceVersion"):
                    return  # a relist of an unchanged object
                self._unindex(key, old)
            self.store[key] = obj
            self._index(key, obj)
            new = obj
        for handler in self.handlers:
            try:
                handler(old, new)
            except Exception:  # one broken handler must not starve the others
                log.exception("informer handler failed", resource=self.res.plural)

    def _index(self, key: ObjectKey, obj: Obj) -> None:
        for name, func in self._index_funcs.items():
            index = self._indexes[name]
            for value in func(obj):
                index.setdefault(value, {})[key] = None

    def _unindex(self, key: ObjectKey, obj: Obj) -> None:
        for name, func in self._index_funcs.items():
            index = self._indexes[name]
            for value in func(obj):
                bucket = index.get(value)
                if bucket is not None:
                    bucket.pop(key, None)
                    if not bucket:
                        del index[value]


def new_informer(storage: Storage, caches: WatchCaches, res: Resource, clusters: frozenset[str]) -> Informer:
    """An informer with the indexes every controller uses: by logical cluster, namespace and controller."""
    informer = Informer(storage, caches, res, clusters)
    informer.add_index("cluster", lambda o: [cluster_of(o)])
    if res.namespaced:
        informer.add_index("namespace", lambda o: [f"{cluster_of(o)}/{o['metadata'].get('namespace', '')}"])
        informer.add_index("owner", lambda o: [uid] if (uid := controller_uid(o)) else [])
        informer.add_index("orphan", lambda o: [] if controller_uid(o) else
                           [index_value(cluster_of(o), o["metadata"].get("namespace", ""))])
    return informer


def index_value(cluster: str, namespace: str) -> str:
    """The `namespace` index's value for a namespace of a logical cluster."""
    return f"{cluster}/{namespace}"


