"""The namespace controller: empties a terminating namespace, then lets it go (kube's
namespace finalizer `kubernetes`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

import structlog

from kcp_apiserver.registry.builtin import NAMESPACE
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import KeyNotFound, Storage, Stored
from kcp_apiserver.storage.keys import object_key, scope_prefix
from kcp_apiserver.storage.watchcache import Follower, WatchCache
from kcpcommon.controller import Controller, Result
from kcpcommon.keys import cluster_of
from kcpcommon.tasks import cancel_and_wait, spawn, supervise

log = structlog.get_logger("namespaces")

FINALIZER = "kubernetes"
RECHECK_SECONDS = 1.0  # content still being deleted: look again this soon


class NamespaceController:
    """Follows namespaces; each terminating one is reconciled until it is empty and removed."""

    def __init__(self, storage: Storage, cache: WatchCache, registry: Registry,
                 namespaced_resources: Callable[[str], Iterable[Resource]]) -> None:
        self.storage = storage
        self.cache = cache
        self.registry = registry
        self.namespaced_resources = namespaced_resources
        self.controller: Controller[tuple[str, str]] = Controller("namespace", self.reconcile)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        follower = Follower(self.storage, self.cache, observe=self._observe, reset=lambda: None,
                            name="controller:namespaces")
        first = [await follower.resync()]

        async def follow() -> None:
            await follower.follow(first.pop() if first else await follower.resync())

        self._tasks = [spawn(supervise(follow, name="controller:namespaces:follow"),
                             name="controller:namespaces:follow"),
                       spawn(self.controller.start(), name="controller:namespaces")]

    async def stop(self) -> None:
        await cancel_and_wait(*self._tasks)

    def _observe(self, ns: Obj, deleted: bool) -> None:
        meta = ns["metadata"]
        if not deleted and meta.get("deletionTimestamp"):
            self.controller.enqueue((cluster_of(ns) or "", meta["name"]))

    async def reconcile(self, key: tuple[str, str]) -> Result | None:
        return None if await self.finalize(*key) else Result(requeue_after=RECHECK_SECONDS)

    async def finalize(self, cluster: str, namespace: str) -> bool:
        """Delete the namespace's content; remove the namespace once empty. True when finished."""
        remaining = 0
        for res in self.namespaced_resources(cluster):
            async for _ in self.registry.delete_pages(res, cluster, namespace):
                pass  # page by page, nothing kept: a namespace may hold tens of thousands of objects
            remaining += await self.storage.count(scope_prefix(res.prefix, cluster, namespace))
        if remaining:
            return False
        key = object_key(NAMESPACE.prefix, cluster, "", namespace)

        async def drop_finalizer(current: Stored) -> Obj | None:
            finalizers = (current.obj.get("spec") or {}).get("finalizers") or []
            if FINALIZER not in finalizers:
                return None
            updated = dict(current.obj)
            updated["spec"] = {**current.obj.get("spec", {}), "finalizers": [f for f in finalizers if f != FINALIZER]}
            return updated

        try:
            current = await self.storage.guaranteed_update(key, drop_finalizer)
            if not current.obj["metadata"].get("finalizers") and not current.obj["spec"].get("finalizers"):
                await self.storage.delete(key, current.mod_revision)
        except KeyNotFound:
            return True
        return True
