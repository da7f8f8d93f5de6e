"""What every simulated controller works with: the shared informers, the writers and the recorder.

Writes of status (and the scheduler's binding) go straight to storage with the informer's
resourceVersion as the precondition: one etcd round trip, as kube's status writers cost one API call.
A conflict means the informer was behind: read, mutate again, retry. Everything else (creating and
deleting pods and ReplicaSets, scaling) goes through the registry, so kube's defaults, validation,
admission and the garbage collector's finalizers apply to controller writes as to users' writes.
What a write returns is read-only and knows its key (`Located`, as the informers' objects are), so the
sim finds its logical cluster without the `kcp.io/cluster` annotation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kcp_apiserver.embedding import (
    Catalog,
    KeyNotFound,
    Propagation,
    Registry,
    Resource,
    RevisionConflict,
    Storage,
    Stored,
)
from kcp_apiserver.embedding import status as st
from kcp_sim_cluster.controlplane.events import EventRecorder
from kcp_sim_cluster.controlplane.informer import Informer, cluster_of, key_of
from kcp_sim_cluster.controlplane.objects import Obj, copy_obj
from kcp_sim_cluster.controlplane.options import ControlPlaneOptions
from kcpcommon.keys import ObjectKey, located

Mutator = Callable[[dict[str, Any]], bool]  # changes the object in place; False: nothing to write

# which served resource each informer follows: name -> (group, plural)
RESOURCES = {
    "nodes": ("", "nodes"), "pods": ("", "pods"), "services": ("", "services"), "endpoints": ("", "endpoints"),
    "namespaces": ("", "namespaces"), "leases": ("coordination.k8s.io", "leases"),
    "endpointslices": ("discovery.k8s.io", "endpointslices"), "events": ("", "events"),
    "deployments": ("apps", "deployments"), "replicasets": ("apps", "replicasets"),
    "statefulsets": ("apps", "statefulsets"), "daemonsets": ("apps", "daemonsets"),
    "jobs": ("batch", "jobs"), "cronjobs": ("batch", "cronjobs"),
    "persistentvolumeclaims": ("", "persistentvolumeclaims"), "persistentvolumes": ("", "persistentvolumes"),
    "storageclasses": ("storage.k8s.io", "storageclasses"),
    "controllerrevisions": ("apps", "controllerrevisions"), "configmaps": ("", "configmaps"),
    "replicationcontrollers": ("", "replicationcontrollers"),
    "resourcequotas": ("", "resourcequotas"), "poddisruptionbudgets": ("policy", "poddisruptionbudgets"),
    "horizontalpodautoscalers": ("autoscaling", "horizontalpodautoscalers"),
}


@dataclass
class Sim:
    options: ControlPlaneOptions
    storage: Storage
    catalog: Catalog
    registry: Registry
    recorder: EventRecorder
    informers: dict[str, Informer] = field(default_factory=dict)

    def resource(self, name: str) -> Resource | None:
        group, plural = RESOURCES[name]
        for res in self.catalog.builtins:
            if res.group == group and res.plural == plural:
                return res
        return None

    def informer(self, name: str) -> Informer:
        return self.informers[name]

    def key(self, res: Resource, obj: Obj) -> str:
        meta = obj["metadata"]
        return self.registry.key(res, cluster_of(obj), meta.get("namespace", ""), meta["name"])

    async def write_status(self, res: Resource, obj: Obj, mutate: Mutator) -> Obj | None:
        """Apply `mutate` to (a copy of) the object and store it; None if it is gone or unchanged."""
        key = self.key(res, obj)
        where = key_of(obj)
        current = copy_obj(obj)
        revision = int(obj["metadata"].get("resourceVersion") or 0)
        for _ in range(16):
            if not mutate(current):
                return None
            try:
                return located((await self.storage.update(key, current, revision)).obj, where)
            except RevisionConflict:
                try:
                    fresh: Stored = await self.storage.get(key)
                except KeyNotFound:
                    return None
                if fresh.obj["metadata"].get("uid") != obj["metadata"].get("uid"):
                    return None  # another object of the same name now
                current, revision = fresh.obj, fresh.mod_revision
            except KeyNotFound:
                return None
        return None

    async def create(self, res: Resource, cluster: str, namespace: str, obj: dict[str, Any]) -> Obj | None:
        """Create through the registry; None if it exists already or its namespace is going away."""
        try:
            created = await self.registry.create(res, cluster, namespace, obj)
        except st.APIError as exc:
            if exc.code in (409, 403, 404):
                return None
            raise
        return located(created, ObjectKey(cluster, namespace if res.namespaced else "", created["metadata"]["name"]))

    async def delete(self, res: Resource, obj: Obj, *, precondition_uid: bool = True,
                     propagation: str | None = None) -> bool:
        """Delete through the registry (graceful for pods; finalizers hold); False if already gone."""
        meta = obj["metadata"]
        try:
            await self.registry.delete(res, cluster_of(obj), meta.get("namespace", ""), meta["name"],
                                       preconditions={"uid": meta["uid"]} if precondition_uid else None,
                                       propagation=Propagation(policy=propagation) if propagation else None)
        except st.APIError as exc:
            if exc.code in (404, 409):
                return False
            raise
        return True

    async def patch(self, res: Resource, obj: Obj, mutate: Callable[[dict[str, Any]], None]) -> Obj | None:
        """A main-resource write through the registry (validation and admission); None if gone."""
        meta = obj["metadata"]

        def apply(current: dict[str, Any]) -> dict[str, Any]:
            if current["metadata"].get("uid") != meta.get("uid"):
                raise st.not_found(res.plural, meta["name"], res.group)
            mutate(current)
            return current

        try:
            patched = await self.registry.patch(res, cluster_of(obj), meta.get("namespace", ""), meta["name"], apply)
        except st.APIError as exc:
            if exc.code == 404:
                return None
            raise
        return located(patched, key_of(obj))
