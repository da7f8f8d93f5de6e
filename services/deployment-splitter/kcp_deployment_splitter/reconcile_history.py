"""The ControllerRevisions of kcp's StatefulSets and DaemonSets (kcpcommon.controllerhistory), so `kubectl
rollout history|undo statefulset|daemonset` work through kcp as on a cluster.

Each physical cluster's controllers keep the history of the copy they run; in kcp nothing did, so kubectl
found no revisions to list or roll back to. One controller per kind, keyed by set. The revisions carry no
assignment label, so no syncer copies them down; no pod runs in kcp, so only the current revision is in use.
A name taken by another owner's revision (kube would bump the set's collisionCount, a status field the
clusters' copies own here) is reported and retried.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Result
from kcpcommon.controllerhistory import controlled_by, plan_history
from kcpcommon.errors import APIAlreadyExistsError, APINotFoundError
from kcpcommon.keys import ObjectKey, key_for
from kcpcommon.podtemplatehash import pod_template_hash
from kcpcommon.store import IndexReader

from .names import COMPONENT

log = structlog.get_logger(COMPONENT)

SETS = {"StatefulSet": ("apps/v1", "statefulsets"), "DaemonSet": ("apps/v1", "daemonsets")}
CONTROLLER_REVISIONS = ("apps/v1", "controllerrevisions")
SET_OWNER_INDEX = "splitter-history-owner"  # revisions by (cluster, namespace, kind, controlling set's name)
RETRY = 30.0  # seconds until a revision kcp cannot serve yet, or a taken name, is tried again


def set_owner_value(cluster: str, namespace: str, kind: str, name: str) -> str:
    return f"{cluster}|{namespace}|{kind}|{name}"


def set_of(rev: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, name) of the StatefulSet or DaemonSet controlling a revision, if one does."""
    for ref in (rev.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") in SETS and ref.get("apiVersion") == "apps/v1":
            return str(ref["kind"]), str(ref.get("name"))
    return None


def set_owner_index(rev: Mapping[str, Any]) -> list[str]:
    owner = set_of(rev)
    if owner is None:
        return []
    key = key_for(rev)
    return [set_owner_value(key.cluster, key.namespace, *owner)]


class SetHistory:
    """`reconcile(ObjectKey of a set of kind `kind`)`: its revisions, from `revisions` indexed by `set_owner_index`."""

    def __init__(self, kcp: ClientFactory, *, kind: str, sets: IndexReader, revisions: IndexReader) -> None:
        self.kcp = kcp
        self.kind = kind
        self.sets = sets
        self.revisions = revisions

    async def reconcile(self, key: ObjectKey) -> Result | None:
        owner = self.sets.get(key)
        if owner is None or (owner.get("metadata") or {}).get("deletionTimestamp"):
            return None  # the garbage collector removes a gone set's revisions
        owner = {**owner, "apiVersion": "apps/v1", "kind": self.kind}
        template = (owner.get("spec") or {}).get("template") or {}
        hash_ = pod_template_hash(dict(template), int((owner.get("status") or {}).get("collisionCount") or 0))
        owned = [rev for rev in self.revisions.by_index(
            SET_OWNER_INDEX, set_owner_value(key.cluster, key.namespace, self.kind, key.name)) if controlled_by(rev, owner)]
        plan = plan_history(owner, template, hash_, owned)
        resource = self.kcp.dynamic(key.cluster).resource(*CONTROLLER_REVISIONS, namespaced=True)
        if plan.create is not None:
            try:
                await resource.create(plan.create, namespace=key.namespace)
            except APINotFoundError:
                return Result(requeue_after=RETRY)  # no physical cluster brought ControllerRevisions here yet
            except APIAlreadyExistsError:
                return await self._name_taken(key, owner, plan.create["metadata"]["name"])
        elif plan.renumber is not None:
            await resource.patch(plan.renumber["metadata"]["name"], {"revision": plan.number},
                                 namespace=key.namespace)
        for rev in plan.delete:
            try:
                await resource.delete(rev["metadata"]["name"], namespace=key.namespace,
                                      preconditions={"uid": rev["metadata"]["uid"]})
            except APINotFoundError:
                pass
        return None

    async def _name_taken(self, key: ObjectKey, owner: Mapping[str, Any], name: str) -> Result | None:
        resource = self.kcp.dynamic(key.cluster).resource(*CONTROLLER_REVISIONS, namespaced=True)
        try:
            existing = await resource.get(name, namespace=key.namespace)
        except APINotFoundError:
            return Result(requeue_after=1.0)  # gone meanwhile: try the name again
        if controlled_by(existing, owner):
            return None  # our own create, not yet in the cache: its event brings the set back
        log.warning("controller revision name taken by another owner", cluster=key.cluster, namespace=key.namespace,
                    kind=self.kind, name=key.name, revision=name)
        return Result(requeue_after=RETRY)
