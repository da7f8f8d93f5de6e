"""Reconcile one root Deployment's revisions (see `revisions.py`): its ReplicaSets in kcp, then their
status, then the root's revision annotation. Each change of an RS's size is a `ScalingReplicaSet` Event
on the root, worded as kube's deployment controller words it, so `kubectl describe` reads the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Result
from kcpcommon.errors import APIAlreadyExistsError, APINotFoundError
from kcpcommon.events import NORMAL, EventRecorder
from kcpcommon.keys import ObjectKey, key_for
from kcpcommon.podtemplatehash import templates_equal_ignoring_hash
from kcpcommon.store import IndexReader

from .names import COMPONENT, DEPLOYMENTS, REPLICA_SETS
from .revisions import REVISION, collision_count, plan_revisions
from .shares import is_root

log = structlog.get_logger(COMPONENT)

OWNER_INDEX = "splitter-revisions-owner"  # ReplicaSets by (cluster, namespace, controlling Deployment's uid)
UNSERVED_RETRY = 30.0  # seconds until a logical cluster that does not serve ReplicaSets yet is tried again
COLLISION_RETRY = 1.0  # seconds until a root whose ReplicaSet name was taken tries its next name


def owner_index_value(cluster: str, namespace: str, uid: str) -> str:
    return f"{cluster}|{namespace}|{uid}"


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The Deployment that controls this ReplicaSet, if one does."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Deployment" and ref.get("apiVersion") == "apps/v1":
            return dict(ref)
    return None


def owner_index(obj: Mapping[str, Any]) -> list[str]:
    ref = controller_of(obj)
    if ref is None:
        return []
    key = key_for(obj)
    return [owner_index_value(key.cluster, key.namespace, str(ref.get("uid")))]


def _replicas(obj: Mapping[str, Any] | None) -> int:
    return int(((obj or {}).get("spec") or {}).get("replicas") or 0)


class Revisions:
    """`reconcile(ObjectKey of a root)`; ReplicaSets come from `replica_sets`, indexed by `owner_index`."""

    def __init__(self, kcp: ClientFactory, *, deployments: IndexReader, replica_sets: IndexReader,
                 events: EventRecorder) -> None:
        self.kcp = kcp
        self.deployments = deployments
        self.replica_sets = replica_sets
        self.events = events

    async def reconcile(self, key: ObjectKey) -> Result | None:
        root = self.deployments.get(key)
        meta = (root or {}).get("metadata") or {}
        if root is None or not is_root(root) or meta.get("deletionTimestamp"):
            return None  # a child, pinned or gone: the garbage collector removes a gone root's ReplicaSets
        owned = self.replica_sets.by_index(OWNER_INDEX, owner_index_value(key.cluster, key.namespace, meta["uid"]))
        plan = plan_revisions(root, owned)
        resource = self.kcp.dynamic(key.cluster).resource(*REPLICA_SETS, namespaced=True)
        by_name = {rs["metadata"]["name"]: rs for rs in owned}
        written: dict[str, Mapping[str, Any]] = {}
        if plan.create is not None:
            try:
                written[plan.current or ""] = await resource.create(plan.create, namespace=key.namespace)
            except APINotFoundError:
                return Result(requeue_after=UNSERVED_RETRY)  # no physical cluster brought ReplicaSets here yet
            except APIAlreadyExistsError:
                return await self._name_taken(key, root, plan.create)
            self._scaled(key, root, plan.current or "", 0, _replicas(plan.create))
        for body in plan.update:
            name = body["metadata"]["name"]
            written[name] = await resource.replace(body, namespace=key.namespace)
            self._scaled(key, root, name, _replicas(by_name.get(name)), _replicas(body))
        for rs in plan.delete:
            try:
                await resource.delete(rs["metadata"]["name"], namespace=key.namespace,
                                      preconditions={"uid": rs["metadata"]["uid"]})
            except APINotFoundError:
                pass
        for name, status in plan.statuses.items():
            found = written.get(name) or by_name.get(name)
            if found is None:
                continue
            rs = found
            want = {**status, "observedGeneration": int((rs.get("metadata") or {}).get("generation") or 0)}
            if rs.get("status") != want:
                await resource.replace({**rs, "status": want}, namespace=key.namespace, subresource="status")
        if plan.revision is not None and (meta.get("annotations") or {}).get(REVISION) != plan.revision:
            await self.kcp.dynamic(key.cluster).resource(*DEPLOYMENTS, namespaced=True).patch(
                key.name, {"metadata": {"annotations": {REVISION: plan.revision}}}, namespace=key.namespace)
        return None

    async def _name_taken(self, key: ObjectKey, root: Mapping[str, Any], wanted: Mapping[str, Any]) -> Result | None:
        """kube's rule when the new ReplicaSet's name is taken: our own create the cache has not shown yet is
        left to its event; anything else bumps the root's status.collisionCount, so the next name differs."""
        resource = self.kcp.dynamic(key.cluster).resource(*REPLICA_SETS, namespaced=True)
        name = wanted["metadata"]["name"]
        try:
            existing = await resource.get(name, namespace=key.namespace)
        except APINotFoundError:
            return Result(requeue_after=COLLISION_RETRY)  # gone meanwhile: try the name again
        ref = controller_of(existing) or {}
        if ref.get("uid") == root["metadata"]["uid"] and templates_equal_ignoring_hash(
                (existing.get("spec") or {}).get("template") or {}, (root.get("spec") or {}).get("template") or {}):
            return None  # our own create, not yet in the cache: its event brings the root back
        count = collision_count(root) + 1
        log.info("replica set name taken: collisionCount bumped", cluster=key.cluster, namespace=key.namespace,
                 name=key.name, replica_set=name, collision_count=count)
        await self.kcp.dynamic(key.cluster).resource(*DEPLOYMENTS, namespaced=True).replace(
            {**root, "status": {**(root.get("status") or {}), "collisionCount": count}},
            namespace=key.namespace, subresource="status")  # root's resourceVersion: a conflict retries
        return Result(requeue_after=COLLISION_RETRY)

    def _scaled(self, key: ObjectKey, root: Mapping[str, Any], name: str, before: int, after: int) -> None:
        if before == after:
            return
        verb = "up" if after > before else "down"
        self.events.record({**root, "apiVersion": "apps/v1", "kind": "Deployment"}, NORMAL, "ScalingReplicaSet",
                           f"Scaled {verb} replica set {name} from {before} to {after}", cluster=key.cluster)
