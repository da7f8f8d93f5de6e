"""The workspace controller's wiring: a handler on the Workspaces' shared informer queues each Workspace's
key, one on the LogicalClusters' queues the Workspace that owns a changed one (an initializer lifted), and
one on the APIBindings' queues the Workspace whose logical cluster holds a changed one (a default binding Bound);
`reconcile_phase` brings a new one to Ready, `reconcile_deletion` removes a deleted one's logical cluster."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kcp_apiserver.registry.informers import Informers, WatchCacheInformer
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.keys import ObjectKey
from kcp_apiserver.tenancy.reconcile_deletion import WorkspaceDeletion
from kcp_apiserver.tenancy.reconcile_phase import WorkspacePhases
from kcp_apiserver.tenancy.typelookup import type_lookup
from kcp_apiserver.tenancy.types import LOGICAL_CLUSTER, WORKSPACE
from kcpcommon.controller import Controller, Result
from kcpcommon.keys import cluster_of
from kcpcommon.sharedcache import DeletedFinalStateUnknown, HandlerRegistration, deleted_object
from kcpcommon.tasks import cancel_and_wait, spawn


class WorkspaceController:
    """Workspaces of every logical cluster, one reconcile per Workspace key."""

    def __init__(self, storage: Storage, informers: Informers, registry: Registry,
                 resources: Callable[[str], Iterable[Resource]], *, base_url: str,
                 api_binding: Resource | None = None, metrics: CollectorRegistry | None = None) -> None:
        self.informers = informers
        self.phases = WorkspacePhases(storage, registry, base_url=base_url, types=type_lookup(lambda: registry),
                                      api_binding=api_binding)
        self.deletion = WorkspaceDeletion(storage, registry, resources)
        self.controller: Controller[ObjectKey] = Controller("workspace", self.reconcile, registry=metrics,
                                                            component="kcp_apiserver")
        self._workspaces: WatchCacheInformer | None = None
        self._handler: HandlerRegistration | None = None
        self._clusters: HandlerRegistration | None = None
        self._bindings: HandlerRegistration | None = None
        self.api_binding = api_binding
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._workspaces = await self.informers.get(WORKSPACE)
        self._handler = self._workspaces.add_handler(on_add=self._enqueue, on_update=lambda _, ws: self._enqueue(ws),
                                                     on_delete=self._gone, name="controller:workspace")
        clusters = await self.informers.get(LOGICAL_CLUSTER)
        self._clusters = clusters.add_handler(on_update=lambda _, lc: self._owner_changed(lc),
                                              name="controller:workspace:logicalclusters")
        synced = [self._handler.wait_for_sync(), self._clusters.wait_for_sync()]
        if self.api_binding is not None:
            bindings = await self.informers.get(self.api_binding)
            self._bindings = bindings.add_handler(on_update=lambda _, binding: self._binding_changed(binding),
                                                  name="controller:workspace:apibindings")
            synced.append(self._bindings.wait_for_sync())
        self._tasks = [spawn(self.controller.start(wait_for=synced), name="controller:workspace")]

    async def stop(self) -> None:
        for handler in (self._handler, self._clusters, self._bindings):
            if handler is not None:
                handler.remove()
        await cancel_and_wait(*self._tasks)

    def _enqueue(self, ws: Mapping[str, Any]) -> None:
        self.controller.enqueue(ObjectKey(cluster_of(ws) or "", "", ws["metadata"]["name"]))

    def _owner_changed(self, lc: Mapping[str, Any]) -> None:
        owner = (lc.get("spec") or {}).get("owner") or {}
        if owner.get("resource") == WORKSPACE.plural and owner.get("cluster") and owner.get("name"):
            self.controller.enqueue(ObjectKey(str(owner["cluster"]), "", str(owner["name"])))

    def _binding_changed(self, binding: Mapping[str, Any]) -> None:
        """A binding in a workspace's logical cluster changed (Bound): that workspace may finish initializing."""
        parent, _, name = (cluster_of(binding) or "").rpartition(":")
        if parent and name:
            self.controller.enqueue(ObjectKey(parent, "", name))

    def _gone(self, ws: Obj | DeletedFinalStateUnknown) -> None:
        self._enqueue(deleted_object(ws))

    async def reconcile(self, key: ObjectKey) -> Result | None:
        assert self._workspaces is not None
        cached = self._workspaces.indexer.get(key)
        if cached is None:
            return None
        if cached["metadata"].get("deletionTimestamp"):
            return await self.deletion.reconcile(key.cluster, cached)
        return await self.phases.reconcile(key.cluster, cached)
