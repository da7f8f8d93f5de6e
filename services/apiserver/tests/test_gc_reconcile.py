"""The collector's decisions on a real etcd, one reconcile at a time (the graph fed by hand)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from etcd3aio import Etcd3Client

from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.apimachinery.deleteoptions import Propagation
from kcp_apiserver.controllers.gc_graph import Graph, ObjectRef
from kcp_apiserver.controllers.gc_reconcile import Collector, OwnerKindUnknown
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.catalog import Catalog
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import KeyNotFound, Storage, Stored, Unavailable
from kcp_apiserver.storage.keys import object_key
from kcpcommon.controller import Result, TerminalError

CONFIGMAP = next(r for r in BUILTINS if r.kind == "ConfigMap")
CLUSTER_ROLE = next(r for r in BUILTINS if r.kind == "ClusterRole")


class FlakyStorage(Storage):
    """etcd that cannot be reached for keys containing `unreachable`."""

    async def get(self, key: str) -> Stored:
        if "unreachable" in key:
            raise Unavailable("etcd did not answer")
        return await super().get(key)


async def _allow(*_: Any) -> None:
    return None


@dataclass
class World:
    storage: Storage
    registry: Registry
    graph: Graph
    collector: Collector
    queued: list[ObjectRef]
    synced: dict[str, bool] = field(default_factory=dict)
    cluster: str = field(default_factory=lambda: f"gc-{uuid.uuid4().hex[:8]}")

    async def create(self, name: str, *owners: dict[str, Any], cluster: str | None = None,
                     res: Resource = CONFIGMAP, finalizers: tuple[str, ...] = (),
                     labels: dict[str, str] | None = None) -> Obj:
        meta: dict[str, Any] = {"name": name}
        if labels:
            meta["labels"] = labels
        if owners:
            meta["ownerReferences"] = list(owners)
        if finalizers:
            meta["finalizers"] = list(finalizers)
        obj = {"apiVersion": res.api_version, "kind": res.kind, "metadata": meta}
        created = await self.registry.create(res, cluster or self.cluster, "ns", obj)
        self.graph.observe(res.prefix, created, False)
        return created

    async def get(self, name: str, cluster: str | None = None, res: Resource = CONFIGMAP) -> Obj | None:
        namespace = "ns" if res.namespaced else ""
        try:
            return (await self.storage.get(object_key(res.prefix, cluster or self.cluster, namespace, name))).obj
        except KeyNotFound:
            return None

    async def refresh(self, name: str, cluster: str | None = None) -> Obj | None:
        """Feed the graph the object's current state (or its deletion), as the follower would."""
        current = await self.get(name, cluster)
        if current is not None:
            self.graph.observe(CONFIGMAP.prefix, current, False)
        return current

    async def reconcile(self, obj: Obj, res: Resource = CONFIGMAP) -> Result | None:
        meta = obj["metadata"]
        ref = ObjectRef(meta["annotations"]["kcp.io/cluster"], res.prefix, meta.get("namespace", ""), meta["name"],
                        meta["uid"])
        return await self.collector.reconcile(ref)


def ref_to(obj: Obj, *, block: bool = False, uid: str | None = None, kind: str = "ConfigMap",
           api_version: str = "v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": obj["metadata"]["name"],
            "uid": uid or obj["metadata"]["uid"], "blockOwnerDeletion": block}


@pytest.fixture
async def world(etcd: Etcd3Client) -> AsyncIterator[World]:
    storage = FlakyStorage(etcd)
    registry = Registry(storage, admit=_allow, ensure_cluster=_allow)
    graph = Graph()
    queued: list[ObjectRef] = []
    synced: dict[str, bool] = {}
    collector = Collector(storage, registry, Catalog((*BUILTINS, CRD)), graph,
                          synced=lambda cluster: synced.get(cluster, True), enqueue=queued.append)
    yield World(storage, registry, graph, collector, queued, synced)


async def test_a_dependent_whose_owner_never_existed_is_deleted(world: World) -> None:
    dependent = await world.create("dep", {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost",
                                           "uid": str(uuid.uuid4())})
    await world.reconcile(dependent)
    assert await world.get("dep") is None


async def test_a_dependent_with_an_owner_left_only_loses_the_dead_reference(world: World) -> None:
    alive = await world.create("alive")
    dead = await world.create("dead")
    dependent = await world.create("dep", ref_to(alive), ref_to(dead))
    await world.registry.delete(CONFIGMAP, world.cluster, "ns", "dead")
    world.graph.observe(CONFIGMAP.prefix, dead, True)
    await world.reconcile(dependent)
    kept = await world.get("dep")
    assert kept is not None
    assert [r["name"] for r in kept["metadata"]["ownerReferences"]] == ["alive"]


async def test_an_owner_that_cannot_be_read_is_never_taken_for_gone(world: World) -> None:
    dependent = await world.create("dep", {"apiVersion": "v1", "kind": "ConfigMap", "name": "unreachable",
                                           "uid": str(uuid.uuid4())})
    with pytest.raises(Unavailable):
        await world.reconcile(dependent)
    assert await world.get("dep") is not None


async def test_an_owner_kind_the_cluster_does_not_serve_is_retried_not_collected(world: World) -> None:
    dependent = await world.create("dep", {"apiVersion": "example.com/v1", "kind": "Gadget", "name": "g",
                                           "uid": str(uuid.uuid4())})
    with pytest.raises(OwnerKindUnknown):
        await world.reconcile(dependent)
    assert await world.get("dep") is not None


async def test_an_owner_with_the_same_uid_in_another_logical_cluster_owns_nothing_here(world: World) -> None:
    other = f"{world.cluster}-other"
    shared_uid = str(uuid.uuid4())
    owner_key = object_key(CONFIGMAP.prefix, world.cluster, "ns", "owner")
    stored = await world.storage.create(owner_key, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "owner", "namespace": "ns", "uid": shared_uid, "annotations": {"kcp.io/cluster": world.cluster}}})
    world.graph.observe(CONFIGMAP.prefix, stored.obj, False)
    here = await world.create("dep", ref_to(stored.obj))
    there = await world.create("dep", ref_to(stored.obj), cluster=other)
    await world.reconcile(here)
    await world.reconcile(there)
    assert await world.get("dep") is not None
    assert await world.get("dep", other) is None


async def test_orphaning_takes_the_owner_off_its_dependents_then_lets_it_go(world: World) -> None:
    owner = await world.create("owner")
    await world.create("d1", ref_to(owner))
    await world.create("d2", ref_to(owner))
    await world.registry.delete(CONFIGMAP, world.cluster, "ns", "owner", propagation=Propagation("Orphan"))
    deleting = await world.refresh("owner")
    assert deleting is not None and deleting["metadata"]["finalizers"] == ["orphan"]
    await world.reconcile(deleting)
    assert await world.get("owner") is None
    for name in ("d1", "d2"):
        orphan = await world.get(name)
        assert orphan is not None and "ownerReferences" not in orphan["metadata"]


async def test_orphaning_waits_until_the_graph_holds_every_resource(world: World) -> None:
    owner = await world.create("owner")
    await world.create("dep", ref_to(owner))
    await world.registry.delete(CONFIGMAP, world.cluster, "ns", "owner", propagation=Propagation("Orphan"))
    deleting = await world.refresh("owner")
    world.synced[world.cluster] = False
    result = await world.reconcile(deleting)  # type: ignore[arg-type]
    assert result is not None and result.requeue_after
    assert await world.get("owner") is not None
    assert (await world.get("dep"))["metadata"]["ownerReferences"]  # type: ignore[index]


async def test_foreground_deletion_holds_the_owner_until_blocking_dependents_are_gone(world: World) -> None:
    owner = await world.create("owner")
    blocking = await world.create("blocking", ref_to(owner, block=True))
    await world.create("free", ref_to(owner))
    await world.registry.delete(CONFIGMAP, world.cluster, "ns", "owner", propagation=Propagation("Foreground"))
    deleting = await world.refresh("owner")
    assert deleting is not None and deleting["metadata"]["finalizers"] == ["foregroundDeletion"]
    await world.reconcile(deleting)
    assert await world.get("owner") is not None
    assert [r.name for r in world.queued] == ["blocking"]
    await world.reconcile(blocking)
    assert await world.get("blocking") is None
    world.graph.observe(CONFIGMAP.prefix, blocking, True)
    await world.reconcile(deleting)
    assert await world.get("owner") is None


async def test_a_dependent_with_dependents_of_its_own_goes_in_the_foreground_when_its_owner_waits(
        world: World) -> None:
    owner = await world.create("owner")
    middle = await world.create("middle", ref_to(owner, block=True))
    await world.create("leaf", ref_to(middle, block=True))
    await world.registry.delete(CONFIGMAP, world.cluster, "ns", "owner", propagation=Propagation("Foreground"))
    await world.refresh("owner")
    await world.reconcile(middle)
    held = await world.get("middle")
    assert held is not None and held["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert held["metadata"]["deletionTimestamp"]


MIRROR = {"state.workload.kcp.io/east": "Upsync"}


async def test_a_syncers_mirror_whose_owner_is_gone_is_left_to_the_syncer(world: World) -> None:
    owner = await world.create("owner")
    mirror = await world.create("mirror", ref_to(owner), labels=MIRROR)
    await world.create("leaf", ref_to(mirror), labels=MIRROR)
    assigned = await world.create("assigned", ref_to(owner), labels={"state.workload.kcp.io/east": "Sync"})
    await world.registry.delete(CONFIGMAP, world.cluster, "ns", "owner")
    world.graph.observe(CONFIGMAP.prefix, owner, True)
    await world.reconcile(mirror)
    await world.reconcile(assigned)
    kept = await world.get("mirror")
    assert kept is not None and not kept["metadata"].get("deletionTimestamp")
    assert await world.get("assigned") is None  # any other dependent is still collected


async def test_a_foreground_owner_neither_deletes_nor_waits_for_a_syncers_mirror(world: World) -> None:
    owner = await world.create("owner")
    mirror = await world.create("mirror", ref_to(owner), labels=MIRROR)
    await world.create("leaf", ref_to(mirror), labels=MIRROR)  # a mirror with dependents of its own
    await world.registry.delete(CONFIGMAP, world.cluster, "ns", "owner", propagation=Propagation("Foreground"))
    deleting = await world.refresh("owner")
    await world.reconcile(mirror)
    kept = await world.get("mirror")
    assert kept is not None and not kept["metadata"].get("deletionTimestamp")
    await world.reconcile(deleting)  # type: ignore[arg-type]
    assert await world.get("owner") is None


async def test_a_cluster_scoped_object_naming_a_namespaced_owner_is_left_alone(world: World) -> None:
    role = await world.create("role", {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm",
                                       "uid": str(uuid.uuid4())}, res=CLUSTER_ROLE)
    with pytest.raises(TerminalError):
        await world.reconcile(role, CLUSTER_ROLE)
    assert await world.get("role", res=CLUSTER_ROLE) is not None


async def test_a_deleting_object_whose_last_finalizer_went_is_removed(world: World) -> None:
    await world.create("stuck", finalizers=("example.com/hold",))
    await world.registry.delete(CONFIGMAP, world.cluster, "ns", "stuck")
    held = await world.get("stuck")
    assert held is not None
    key = object_key(CONFIGMAP.prefix, world.cluster, "ns", "stuck")
    current = await world.storage.get(key)
    released = {**held, "metadata": {k: v for k, v in held["metadata"].items() if k != "finalizers"}}
    await world.storage.update(key, released, current.mod_revision)  # as a writer that bypassed the registry
    await world.refresh("stuck")
    await world.reconcile(released)
    assert await world.get("stuck") is None
