"""The namespace controller: empties a terminating namespace, then lets it go (kube's
namespace finalizer `kubernetes`). A logical cluster's system namespace that goes (kube-node-lease: the
others may not be deleted) is made again, as kube-apiserver's system-namespaces controller does."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

import structlog
from prometheus_client import CollectorRegistry

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.builtin import NAMESPACE
from kcp_apiserver.registry.clusters import SYSTEM_NAMESPACES
from kcp_apiserver.registry.informers import Informers, WatchCacheInformer
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import KeyNotFound, Storage, Stored
from kcp_apiserver.storage.keys import ObjectKey, cluster_marker, object_key, scope_prefix
from kcpcommon.controller import Controller, Result
from kcpcommon.keys import cluster_of
from kcpcommon.sharedcache import DeletedFinalStateUnknown, HandlerRegistration, deleted_object
from kcpcommon.tasks import cancel_and_wait, spawn

log = structlog.get_logger("namespaces")

FINALIZER = "kubernetes"
RECHECK_SECONDS = 1.0  # content still being deleted: look again this soon


class NamespaceController:
    """A handler on the namespaces' informer; each terminating namespace is reconciled until it is empty and removed."""

    def __init__(self, storage: Storage, informers: Informers, registry: Registry,
                 namespaced_resources: Callable[[str], Iterable[Resource]], *,
                 metrics: CollectorRegistry | None = None) -> None:
        self.storage = storage
        self.informers = informers
        self.registry = registry
        self.namespaced_resources = namespaced_resources
        self.controller: Controller[ObjectKey] = Controller("namespace", self.reconcile, registry=metrics,
                                                            component="kcp_apiserver")
        self._handler: HandlerRegistration | None = None
        self._namespaces: WatchCacheInformer | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        namespaces = await self.informers.get(NAMESPACE)
        self._namespaces = namespaces
        self._handler = namespaces.add_handler(on_add=self._seen, on_update=lambda _, ns: self._seen(ns),
                                               on_delete=self._gone, name="controller:namespace")
        self._tasks = [spawn(self.controller.start(wait_for=[self._handler.wait_for_sync()]),
                             name="controller:namespace")]

    async def stop(self) -> None:
        if self._handler is not None:
            self._handler.remove()
        await cancel_and_wait(*self._tasks)

    def _seen(self, ns: Obj) -> None:
        meta = ns["metadata"]
        if meta.get("deletionTimestamp"):
            self.controller.enqueue(ObjectKey(cluster_of(ns) or "", "", meta["name"]))

    def _gone(self, ns: Obj | DeletedFinalStateUnknown) -> None:
        obj = deleted_object(ns)
        if obj["metadata"]["name"] in SYSTEM_NAMESPACES:
            self.controller.enqueue(ObjectKey(cluster_of(obj) or "", "", obj["metadata"]["name"]))

    async def reconcile(self, key: ObjectKey) -> Result | None:
        if self._namespaces is not None and self._namespaces.indexer.get(key) is None:
            # gone: a system namespace is made again, unless its logical cluster went (a deleted workspace)
            if key.name in SYSTEM_NAMESPACES and await self.storage.exists(cluster_marker(key.cluster)):
                await self._recreate(key)
            return None
        if not await self.finalize(key.cluster, key.name):
            return Result(requeue_after=RECHECK_SECONDS)
        log.info("namespace finalized")  # the controller binds cluster and name
        return None

    async def _recreate(self, key: ObjectKey) -> None:
        try:
            await self.registry.create(NAMESPACE, key.cluster, "", {"apiVersion": "v1", "kind": "Namespace",
                                                                    "metadata": {"name": key.name}})
        except st.APIError as exc:
            if exc.code != 409:  # 409: someone made it first
                raise
            return
        log.info("system namespace recreated")

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
