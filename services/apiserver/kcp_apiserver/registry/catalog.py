"""Which resources a logical cluster serves, and their watch caches."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterable, Mapping

from etcd3aio import Etcd3Client

from kcp_apiserver.registry.actions import Action
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.watchcache import WatchCache

GVR = tuple[str, str, str]


class Catalog:
    """Resources by (group, version, plural): built-ins everywhere, custom ones per logical cluster."""

    def __init__(self, builtins: Iterable[Resource],
                 custom_actions: Mapping[tuple[str, str], tuple[Action, ...]] | None = None) -> None:
        self.builtins = tuple(builtins)
        self.custom_actions = custom_actions or {}  # (group, plural) -> subresources a CRD-served type gains
        self._index: dict[GVR, Resource] = {(r.group, r.version, r.plural): r for r in self.builtins}
        self._custom: dict[str, dict[GVR, Resource]] = {}  # cluster -> served custom resources
        self._by_crd: dict[tuple[str, str], list[GVR]] = {}  # (cluster, CRD name) -> what it serves
        # for `*`: which clusters serve a resource, per identity ("" for a CRD's, an export's for a bound type)
        self._clusters_serving: dict[tuple[GVR, str], set[str]] = {}
        self._listeners: list[Callable[[str, list[Resource]], None]] = []  # told what a cluster starts serving

    def add_listener(self, listener: Callable[[str, list[Resource]], None]) -> Callable[[], None]:
        """Call `listener(cluster, resources)` whenever a CRD or binding serves `resources` in a cluster; returns
        the function that removes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def clusters_serving(self, group: str, version: str, plural: str) -> set[str]:
        """The logical clusters where a custom (CRD-served or bound) resource is served, under any identity."""
        return {c for (gvr, _), clusters in self._clusters_serving.items() if gvr == (group, version, plural)
                for c in clusters}

    def lookup(self, cluster: str, group: str, version: str, plural: str, identity: str = "") -> Resource | None:
        """The resource a request names. Across clusters (`*`) a type bound from an export is one export's
        (`identity`, kcp's `<plural>:<identityHash>`); without one, the CRDs' type is preferred."""
        gvr = (group, version, plural)
        found = self._index.get(gvr)
        if found is not None:
            return None if identity else found
        if cluster == "*":
            clusters = self._clusters_serving.get((gvr, identity))
            if not clusters and not identity:  # no CRD serves it: a bound type, the first identity's
                clusters = next((c for _, c in self._by_identity(gvr)), None)
            return self._custom[min(clusters)][gvr] if clusters else None
        custom = self._custom.get(cluster)
        return custom.get(gvr) if custom else None

    def _by_identity(self, gvr: GVR) -> list[tuple[str, set[str]]]:
        """The identities `gvr` is served under across clusters, and where, in a stable order."""
        return sorted((key[1], clusters) for key, clusters in self._clusters_serving.items() if key[0] == gvr)

    def in_cluster(self, res: Resource, cluster: str) -> Resource:
        """The resource as one logical cluster serves it, for objects read across clusters (`*`).

        A custom resource's schema, defaults and versions are that cluster's own CRD's; built-ins
        are the same everywhere. A cluster that no longer serves it (its CRD just went) falls back
        to `res`, the descriptor the request was routed with.
        """
        if not res.is_custom:
            return res
        custom = self._custom.get(cluster)
        found = custom.get((res.group, res.version, res.plural)) if custom else None
        return found if found is not None else res

    def for_cluster(self, cluster: str) -> list[Resource]:
        if cluster == "*":  # one descriptor per resource, the same one `lookup` picks
            gvrs = sorted({gvr for gvr, _ in self._clusters_serving})
            found = [self.lookup("*", *gvr) for gvr in gvrs]
            return list(self.builtins) + [res for res in found if res is not None]
        custom = self._custom.get(cluster)
        return list(self.builtins) + list(custom.values()) if custom else list(self.builtins)

    def set_crd(self, cluster: str, crd_name: str, resources: list[Resource]) -> None:
        self.remove_crd(cluster, crd_name)
        custom = self._custom.setdefault(cluster, {})
        served = []
        for res in resources:
            gvr = (res.group, res.version, res.plural)
            if extra := self.custom_actions.get((res.group, res.plural)):
                res = dataclasses.replace(res, actions=(*res.actions, *extra))
            custom[gvr] = res
            served.append(gvr)
            self._clusters_serving.setdefault((gvr, res.identity), set()).add(cluster)
        self._by_crd[(cluster, crd_name)] = served
        for listener in list(self._listeners):
            listener(cluster, [custom[gvr] for gvr in served])

    def remove_crd(self, cluster: str, crd_name: str) -> None:
        for gvr in self._by_crd.pop((cluster, crd_name), []):
            custom = self._custom.get(cluster, {})
            res = custom.pop(gvr, None)
            if not custom:
                self._custom.pop(cluster, None)
            key = (gvr, res.identity if res is not None else "")
            serving = self._clusters_serving.get(key)
            if serving is not None:
                serving.discard(cluster)
                if not serving:
                    del self._clusters_serving[key]

    def has_crd(self, cluster: str, crd_name: str) -> bool:
        return (cluster, crd_name) in self._by_crd

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
