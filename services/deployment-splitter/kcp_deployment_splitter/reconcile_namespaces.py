"""Reconcile one Namespace under the namespace rule (see `namespaces.py`): its target, then its objects."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Result
from kcpcommon.informer import SharedInformer
from kcpcommon.keys import ObjectKey
from kcpcommon.kubetime import format_time
from kcpcommon.store import CLUSTER_INDEX, CLUSTER_NAMESPACE_INDEX, Indexer, cluster_namespace_value

from .dependencies import KINDS
from .names import ASSIGNMENT_LABEL, COMPONENT, NAMESPACE_SCHEDULED
from .namespaces import WORKLOAD_KINDS, choose, follows_namespace, object_patch, opted_out
from .targets import usable_for, view

log = structlog.get_logger(COMPONENT)

ALL_KINDS = {**KINDS, **WORKLOAD_KINDS}


def scheduled_condition(old: Mapping[str, Any] | None, target: str | None, why: str) -> dict[str, Any]:
    status = "True" if target else "False"
    cond: dict[str, Any] = {
        "type": NAMESPACE_SCHEDULED, "status": status, "reason": "Scheduled" if target else "Unschedulable",
        "message": f"objects in this namespace go to SyncTarget {target}" if target else why}
    same = old is not None and old.get("status") == status
    cond["lastTransitionTime"] = (old or {}).get("lastTransitionTime") if same else format_time()
    return cond


class NamespaceScheduler:
    """`reconcile(ObjectKey(cluster, "", namespace))`."""

    def __init__(self, kcp: ClientFactory, *, namespaces: Indexer, targets: Indexer,
                 objects: Mapping[str, SharedInformer], grace_period: float,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.kcp = kcp
        self.namespaces = namespaces
        self.targets = targets
        self.objects = objects
        self.grace_period = grace_period
        self._now = now

    async def reconcile(self, key: ObjectKey) -> Result | None:
        namespace = self.namespaces.get(ObjectKey(key.cluster, "", key.name))
        if namespace is None or opted_out(namespace) or (namespace.get("metadata") or {}).get("deletionTimestamp"):
            return None
        registered = self.targets.by_index(CLUSTER_INDEX, key.cluster)
        if not registered:
            return None  # a logical cluster without physical clusters: nothing to schedule onto
        targets = view(registered, now=self._now(), grace_period=self.grace_period)
        meta = namespace.get("metadata") or {}
        current = (meta.get("labels") or {}).get(ASSIGNMENT_LABEL)
        target = choose(key.name, current, usable_for(targets, [current] if current else []))
        why = "no Ready, schedulable SyncTarget: " + ", ".join(
            f"{t} {r}" for t, r in sorted({**targets.lost, **targets.grace}.items()))
        await self._namespace(key, namespace, target, why)
        if target is not None:
            await self._objects(key, target)
        return Result(requeue_after=targets.recheck_after + 0.1) if targets.recheck_after is not None else None

    async def _namespace(self, key: ObjectKey, namespace: Mapping[str, Any], target: str | None, why: str) -> None:
        resource = self.kcp.dynamic(key.cluster).resource("v1", "namespaces", namespaced=False)
        labels = (namespace.get("metadata") or {}).get("labels") or {}
        if target is not None and labels.get(ASSIGNMENT_LABEL) != target:
            await resource.patch(key.name, {"metadata": {"labels": {ASSIGNMENT_LABEL: target}}})
            log.info("namespace scheduled", cluster=key.cluster, namespace=key.name, target=target)
        conditions = list((namespace.get("status") or {}).get("conditions") or [])
        old = next((c for c in conditions if c.get("type") == NAMESPACE_SCHEDULED), None)
        cond = scheduled_condition(old, target, why)
        if old is not None and all(old.get(k) == cond[k] for k in ("status", "reason", "message")):
            return
        rest = [c for c in conditions if c.get("type") != NAMESPACE_SCHEDULED]
        await resource.patch(key.name, {"status": {"conditions": [*rest, cond]}}, subresource="status")

    async def _objects(self, key: ObjectKey, target: str) -> None:
        index = cluster_namespace_value(key.cluster, key.name)
        for kind, informer in self.objects.items():
            if not informer.has_synced:
                continue  # a type no physical cluster has brought into kcp yet
            api_version, plural = ALL_KINDS[kind]
            resource = self.kcp.dynamic(key.cluster).resource(api_version, plural, namespaced=True)
            for obj in informer.indexer.by_index(CLUSTER_NAMESPACE_INDEX, index):
                if not follows_namespace(kind, obj):
                    continue
                patch = object_patch(obj, target)
                if patch is not None:
                    await resource.patch(obj["metadata"]["name"], patch, namespace=key.name)
