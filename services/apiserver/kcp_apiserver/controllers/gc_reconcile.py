"""What the garbage collector does with one object, decided from current state (kube's semantics).

- An object that is being deleted with the `orphan` finalizer: its dependents lose their reference to
  it, then the finalizer goes (and with it the object).
- With `foregroundDeletion`: it stays until no dependent blocks it (blockOwnerDeletion), then the
  finalizer goes.
- Otherwise, as a dependent: with at least one owner still there (solid), it only loses the references
  to owners that are gone or deleting in the foreground; with none, it is deleted (in the foreground if
  an owner waits for it and it has dependents of its own, else by its own finalizer's policy).

A syncer's mirror of a physical cluster's object (labelled `state.workload.kcp.io/<target>: Upsync`) is never
collected as a dependent: its ownerReferences only show the chain (Deployment -> ReplicaSet -> Pod) as on a
cluster; it lives as long as its downstream object, which the syncer follows. Were the collector to delete it
(an owner gone or recreated), the syncer would read a user's delete and delete the pod downstream.

An owner is gone only when storage says so: no object with that uid where the reference points, in the
dependent's logical cluster. A storage error is never an absent owner; it raises, and the work queue
retries with backoff.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from enum import Enum
from typing import Any

import structlog

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.deleteoptions import BACKGROUND, FOREGROUND, ORPHAN, Propagation
from kcp_apiserver.apimachinery.validation import FINALIZER_FOREGROUND, FINALIZER_ORPHAN
from kcp_apiserver.controllers.gc_graph import Graph, ObjectRef, OwnerRef, owner_refs
from kcp_apiserver.registry.catalog import Catalog
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import Delete, KeyNotFound, Storage, Stored
from kcp_apiserver.storage.keys import object_key
from kcpcommon.controller import Result, TerminalError
from kcpcommon.keys import is_upsynced

log = structlog.get_logger("garbagecollector")

SYNC_WAIT = 0.2  # seconds before an owner that needs the whole graph looks again while it is still filling


class OwnerState(Enum):
    SOLID = "solid"  # there, and not waiting for its dependents
    DANGLING = "dangling"  # gone
    WAITING = "waiting"  # being deleted in the foreground


class OwnerKindUnknown(Exception):
    """The reference names a kind this logical cluster does not serve: retry later, never treat it as gone."""


def _finalized(obj: Obj) -> bool:
    """Deleting, and nothing left holding it (a Namespace also waits for spec.finalizers)."""
    meta = obj["metadata"]
    if not meta.get("deletionTimestamp") or meta.get("finalizers"):
        return False
    return not (obj.get("kind") == "Namespace" and (obj.get("spec") or {}).get("finalizers"))


class Collector:
    """The reconciler: `reconcile(ref)` for every object the graph says needs a look."""

    def __init__(self, storage: Storage, registry: Registry, catalog: Catalog, graph: Graph, *,
                 synced: Callable[[str], bool], enqueue: Callable[[ObjectRef], None],
                 known_kinds: dict[tuple[str, str, str], Resource] | None = None) -> None:
        self.storage = storage
        self.registry = registry
        self.catalog = catalog
        self.graph = graph
        self.synced = synced  # is every resource of this logical cluster in the graph?
        self.enqueue = enqueue
        self.known_kinds = known_kinds if known_kinds is not None else {}  # custom kinds no longer served

    async def reconcile(self, ref: ObjectRef) -> Result | None:
        node = self.graph.node(ref.cluster, ref.uid)
        if node is None:
            return None  # gone: its dependents were queued when it went
        if not node.deleting and not self.graph.needs_owner_check(node):
            return None
        key = object_key(ref.prefix, ref.cluster, ref.namespace, ref.name)
        try:
            live = await self.storage.get(key)
        except KeyNotFound:
            return None
        meta = live.obj["metadata"]
        if meta.get("uid") != ref.uid:
            return None
        if meta.get("deletionTimestamp"):
            return await self._finalize(ref, key, live)
        owners = owner_refs(meta)
        if not owners or is_upsynced(meta.get("labels")):
            return None
        states = [(owner, await self._owner_state(ref, owner)) for owner in owners]
        solid = [o for o, s in states if s is OwnerState.SOLID]
        waiting = [o for o, s in states if s is OwnerState.WAITING]
        gone = {o.uid for o, s in states if s is not OwnerState.SOLID}
        if solid:
            if gone:  # keep the object; drop what no longer owns it (or would wait on it forever)
                await self._drop_owner_refs(ref, key, gone)
            return None
        finalizers = meta.get("finalizers") or []
        if waiting and self.graph.dependents(ref.cluster, ref.uid):
            if any(d.deleting_dependents for d in self.graph.dependents(ref.cluster, ref.uid)):
                live = await self._unblock_owner_refs(ref, key) or live  # a cycle must not hold both forever
            await self._delete(ref, live, FOREGROUND)
            return None
        policy = ORPHAN if FINALIZER_ORPHAN in finalizers else FOREGROUND if FINALIZER_FOREGROUND in finalizers \
            else BACKGROUND
        await self._delete(ref, live, policy)
        return None

    # -- owners ------------------------------------------------------------------------------

    def resolve(self, cluster: str, owner: OwnerRef) -> Resource | None:
        """Where an ownerReference's kind is stored in this logical cluster: as served (its version preferred),
        else as a CRD that is going or gone defined it (its objects are then gone or going too)."""
        found = None
        for res in self.catalog.for_cluster(cluster):
            if res.group == owner.group and res.kind == owner.kind:
                if res.version == owner.version:
                    return res
                found = found or res
        return found or self.known_kinds.get((cluster, owner.group, owner.kind))

    def resource_at(self, cluster: str, prefix: str) -> Resource | None:
        return next((r for r in self.catalog.for_cluster(cluster) if r.prefix == prefix), None)

    async def _owner_state(self, ref: ObjectRef, owner: OwnerRef) -> OwnerState:
        res = self.resolve(ref.cluster, owner)
        if res is None:
            raise OwnerKindUnknown(f"{owner.api_version}, Kind={owner.kind} is not served in logical cluster "
                                   f"{ref.cluster}")
        if res.namespaced and not ref.namespace:
            raise TerminalError(f"cluster-scoped {ref} names a namespaced owner {owner.kind}/{owner.name}; "
                                "leaving it alone")
        namespace = ref.namespace if res.namespaced else ""
        node = self.graph.node(ref.cluster, owner.uid)
        if node is not None and (node.prefix, node.namespace, node.name) == (res.prefix, namespace, owner.name):
            return OwnerState.WAITING if node.deleting_dependents else OwnerState.SOLID
        try:  # the graph may lag behind: only storage can say an owner is gone
            stored = await self.storage.get(object_key(res.prefix, ref.cluster, namespace, owner.name))
        except KeyNotFound:
            return OwnerState.DANGLING
        meta = stored.obj["metadata"]
        if meta.get("uid") != owner.uid:
            return OwnerState.DANGLING
        if meta.get("deletionTimestamp") and FINALIZER_FOREGROUND in (meta.get("finalizers") or []):
            return OwnerState.WAITING
        return OwnerState.SOLID

    # -- an object being deleted -------------------------------------------------------------

    async def _finalize(self, ref: ObjectRef, key: str, live: Stored) -> Result | None:
        finalizers = live.obj["metadata"].get("finalizers") or []
        if FINALIZER_ORPHAN in finalizers:
            if not self.synced(ref.cluster):
                return Result(requeue_after=SYNC_WAIT)  # an unseen dependent must not lose its owner silently
            for dependent in self.graph.dependents(ref.cluster, ref.uid):
                await self._drop_owner_refs(dependent.ref, object_key(
                    dependent.prefix, dependent.cluster, dependent.namespace, dependent.name), {ref.uid})
            await self._drop_finalizer(ref, key, FINALIZER_ORPHAN)
            return None
        if FINALIZER_FOREGROUND in finalizers:
            if not self.synced(ref.cluster):
                return Result(requeue_after=SYNC_WAIT)
            blocking = self.graph.blocking_dependents(ref.cluster, ref.uid)
            if not blocking:
                await self._drop_finalizer(ref, key, FINALIZER_FOREGROUND)
                return None
            for dependent in blocking:
                if not dependent.deleting_dependents:
                    self.enqueue(dependent.ref)
            return None  # each blocking dependent's deletion brings this owner back
        if _finalized(live.obj):  # its last finalizer went but the delete that should follow did not happen
            await self._delete_finalized(key, live)
        return None

    # -- writes ------------------------------------------------------------------------------

    async def _update(self, ref: ObjectRef, key: str, change: Callable[[Obj], Obj | None]) -> Stored | None:
        """Read-modify-write of this very object (same uid); None if it is gone."""
        async def mutate(current: Stored) -> Obj | None:
            if current.obj["metadata"].get("uid") != ref.uid:
                return None
            return change(current.obj)

        try:
            stored = await self.storage.guaranteed_update(key, mutate)
        except KeyNotFound:
            return None
        return stored if stored.obj["metadata"].get("uid") == ref.uid else None

    async def _drop_owner_refs(self, ref: ObjectRef, key: str, uids: set[str]) -> None:
        def change(obj: Obj) -> Obj | None:
            refs = obj["metadata"].get("ownerReferences") or []
            kept = [r for r in refs if not (isinstance(r, dict) and r.get("uid") in uids)]
            if len(kept) == len(refs):
                return None
            updated = {**obj, "metadata": {**obj["metadata"], "ownerReferences": kept}}
            if not kept:
                del updated["metadata"]["ownerReferences"]
            return updated

        if await self._update(ref, key, change) is not None:
            log.info("removed owner references", object=str(ref), owners=sorted(uids))

    async def _unblock_owner_refs(self, ref: ObjectRef, key: str) -> Stored | None:
        def change(obj: Obj) -> Obj | None:
            refs = obj["metadata"].get("ownerReferences") or []
            if not any(isinstance(r, dict) and r.get("blockOwnerDeletion") for r in refs):
                return None
            unblocked = [{**r, "blockOwnerDeletion": False} if isinstance(r, dict) and r.get("blockOwnerDeletion")
                         else r for r in refs]
            return {**obj, "metadata": {**obj["metadata"], "ownerReferences": unblocked}}

        return await self._update(ref, key, change)

    async def _drop_finalizer(self, ref: ObjectRef, key: str, finalizer: str) -> None:
        """Remove the finalizer; with the last one gone, the object is deleted in the same write."""
        removed = False

        async def drop(current: Stored) -> Obj | Delete | None:
            nonlocal removed
            finalizers = current.obj["metadata"].get("finalizers") or []
            removed = current.obj["metadata"].get("uid") == ref.uid and finalizer in finalizers
            if not removed:
                return None
            updated = copy.deepcopy(current.obj)
            kept = [f for f in finalizers if f != finalizer]
            if kept:
                updated["metadata"]["finalizers"] = kept
            else:
                del updated["metadata"]["finalizers"]
            return Delete(updated) if _finalized(updated) else updated

        try:
            stored = await self.storage.guaranteed_update(key, drop)
        except KeyNotFound:
            return
        if stored.deleted:
            log.info("removed finalizer; object deleted", object=str(ref), finalizer=finalizer)
        elif removed:
            log.info("removed finalizer", object=str(ref), finalizer=finalizer)

    async def _delete_finalized(self, key: str, stored: Stored) -> None:
        try:
            await self.storage.delete(key, stored.mod_revision)
        except KeyNotFound:
            pass

    async def _delete(self, ref: ObjectRef, live: Stored, policy: str) -> None:
        """Delete a dependent whose owners are all gone, unless it changed since it was judged."""
        res = self.resource_at(ref.cluster, ref.prefix)
        if res is None:
            return  # its type is no longer served here; the type's cleanup removes it
        meta = live.obj["metadata"]
        preconditions = {"uid": ref.uid, "resourceVersion": str(meta.get("resourceVersion", ""))}
        propagation = Propagation(policy)
        for attempt in range(2):
            try:
                await self.registry.delete(res, ref.cluster, ref.namespace, ref.name, preconditions=preconditions,
                                           propagation=propagation)
                log.info("deleted dependent whose owners are gone", object=str(ref), propagationPolicy=policy)
                return
            except st.APIError as exc:
                if exc.code == 404:
                    return
                if exc.code != 409 or attempt:
                    raise
            # changed since: its ownerReferences decide whether the judgement still holds (kube does the same)
            try:
                latest = await self.storage.get(object_key(ref.prefix, ref.cluster, ref.namespace, ref.name))
            except KeyNotFound:
                return
            if (latest.obj["metadata"].get("uid") != ref.uid
                    or _owners(latest.obj) != _owners(live.obj)):
                raise st.conflict(res.plural, ref.name, res.group)
            preconditions = {"uid": ref.uid}


def _owners(obj: Obj) -> Any:
    return obj["metadata"].get("ownerReferences")
