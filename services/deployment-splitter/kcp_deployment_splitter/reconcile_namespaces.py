"""Reconcile one Namespace under the namespace rule (see `namespaces.py`): its target, then its objects.

A workspace with SyncTargets of its own schedules onto them; one without follows the Placement that governs
the namespace (`placements.py`): the namespace is put on `numberOfClusters` of the SyncTargets the Placement
may use, in its compute workspace, and leaves one only once nothing of it is assigned there."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Result
from kcpcommon.events import NORMAL, EventRecorder
from kcpcommon.informer import InformerView
from kcpcommon.keys import ObjectKey, sync_target_key
from kcpcommon.kubetime import format_time
from kcpcommon.store import CLUSTER_INDEX, CLUSTER_NAMESPACE_INDEX, IndexReader, cluster_namespace_value

from .dependencies import KINDS
from .names import ASSIGNMENT_LABEL, COMPONENT, NAMESPACE_SCHEDULED, STATE_LABEL_PREFIX, STATE_SYNC
from .namespaces import WORKLOAD_KINDS, choose, follows_namespace, object_patch, opted_out
from .placements import (
    PLACED,
    TARGET_KEY_INDEX,
    choose_targets,
    governing,
    location_workspace,
    namespace_labels,
    number_of_clusters,
    placed_keys,
)
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

    def __init__(self, kcp: ClientFactory, *, namespaces: IndexReader, targets: IndexReader,
                 objects: Mapping[str, InformerView], grace_period: float,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC), placements: IndexReader | None = None,
                 deployments: IndexReader | None = None, events: EventRecorder | None = None) -> None:
        self.kcp = kcp
        self.namespaces = namespaces
        self.targets = targets
        self.objects = objects
        self.grace_period = grace_period
        self._now = now
        self.placements = placements
        self.deployments = deployments  # roots (their shares) and pinned Deployments: what a namespace still holds on a target
        self.events = events

    async def reconcile(self, key: ObjectKey) -> Result | None:
        namespace = self.namespaces.get(ObjectKey(key.cluster, "", key.name))
        if namespace is None or opted_out(namespace) or (namespace.get("metadata") or {}).get("deletionTimestamp"):
            return None
        registered = self.targets.by_index(CLUSTER_INDEX, key.cluster)
        if not registered:
            if self.placements is not None:
                return await self._placed(key, namespace)
            return None  # a logical cluster without physical clusters: nothing to schedule onto
        targets = view(registered, now=self._now(), grace_period=self.grace_period)
        meta = namespace.get("metadata") or {}
        current = (meta.get("labels") or {}).get(ASSIGNMENT_LABEL)
        target = choose(key.name, current, usable_for(targets, [current] if current else []))
        why = "no Ready, schedulable SyncTarget: " + ", ".join(
            f"{t} {r}" for t, r in sorted({**targets.lost, **targets.cordoned}.items()))
        await self._namespace(key, namespace, target, why)
        if target is not None:
            await self._objects(key, target)
        return Result(requeue_after=targets.recheck_after + 0.1) if targets.recheck_after is not None else None

    async def _placed(self, key: ObjectKey, namespace: Mapping[str, Any]) -> Result | None:
        """A namespace of a workspace without SyncTargets: where its governing Placement puts it."""
        assert self.placements is not None
        placement, _ = governing(self.placements.by_index(CLUSTER_INDEX, key.cluster), namespace)
        placed = placed_keys(namespace)
        if placement is None:
            if placed:  # unselected: its workloads stay where they are (nothing is deleted on a label change)
                await self._condition(key, namespace, scheduled_condition(
                    _old_condition(namespace), None, "no Placement selects this namespace: its workloads stay "
                                                     "where they were placed"))
            return None
        workspace, name = location_workspace(placement), placement["metadata"]["name"]
        allowed = set((placement.get("status") or {}).get("syncTargets") or [])
        candidates = [t for t in self.targets.by_index(CLUSTER_INDEX, workspace) if t["metadata"]["name"] in allowed]
        targets = view(candidates, now=self._now(), grace_period=self.grace_period)
        keyed = {sync_target_key(workspace, t["metadata"]["name"]): t["metadata"]["name"] for t in candidates}
        current = [keyed[k] for k, value in sorted(placed.items()) if value == PLACED and k in keyed]
        chosen = choose_targets(key.cluster, key.name, current, usable_for(targets, current),
                                number_of_clusters(placement))
        names = {k: t["metadata"]["name"] for k in placed for t in self.targets.by_index(TARGET_KEY_INDEX, k)}
        patch: dict[str, Any] = namespace_labels(workspace, chosen, placed, self._holding(key), names)
        labels = (namespace.get("metadata") or {}).get("labels") or {}
        assigned = labels.get(ASSIGNMENT_LABEL)
        target = assigned if assigned in chosen else (chosen[0] if chosen else None)
        if target is not None and target != assigned:
            patch[ASSIGNMENT_LABEL] = target
        if patch:
            await self.kcp.dynamic(key.cluster).resource("v1", "namespaces", namespaced=False).patch(
                key.name, {"metadata": {"labels": patch}})
            log.info("namespace placed", cluster=key.cluster, namespace=key.name, placement=name,
                     workspace=workspace, targets=chosen)
            if self.events is not None and sorted(chosen) != sorted(current):
                self.events.record({**namespace, "apiVersion": "v1", "kind": "Namespace"}, NORMAL, "Placed",
                                   f"Placement {name} puts it on SyncTargets {', '.join(chosen) or '(none)'} of "
                                   f"{workspace}" + (f" (was {', '.join(current)})" if current else ""),
                                   cluster=key.cluster)
        if chosen:
            message = f"Placement {name} puts it on SyncTargets {', '.join(chosen)} of workspace {workspace}"
        else:
            message = (f"Placement {name}: no Ready, schedulable SyncTarget of workspace {workspace} it may use: "
                       + (", ".join(f"{t} {r}" for t, r in sorted({**targets.lost, **targets.cordoned}.items()))
                          or f"its Locations offer {', '.join(sorted(allowed)) or 'none'}"))
        cond = scheduled_condition(_old_condition(namespace), ", ".join(chosen) or None, message)
        if chosen:
            cond["message"] = message
        await self._condition(key, namespace, cond)
        if target is not None:
            await self._objects(key, target)
        return Result(requeue_after=targets.recheck_after + 0.1) if targets.recheck_after is not None else None

    def _holding(self, key: ObjectKey) -> set[str]:
        """The SyncTargets something of this namespace is assigned to (by label), mirrors aside."""
        index = cluster_namespace_value(key.cluster, key.name)
        caches = [i.indexer for i in self.objects.values()] + ([self.deployments] if self.deployments else [])
        held: set[str] = set()
        for cache in caches:
            for obj in cache.by_index(CLUSTER_NAMESPACE_INDEX, index):
                labels = (obj.get("metadata") or {}).get("labels") or {}
                if labels.get(ASSIGNMENT_LABEL):
                    held.add(labels[ASSIGNMENT_LABEL])
                held.update(k[len(STATE_LABEL_PREFIX):] for k, v in labels.items()
                            if k.startswith(STATE_LABEL_PREFIX) and v == STATE_SYNC)
        return held

    async def _condition(self, key: ObjectKey, namespace: Mapping[str, Any], cond: dict[str, Any]) -> None:
        conditions = list((namespace.get("status") or {}).get("conditions") or [])
        old = _old_condition(namespace)
        if old is not None and all(old.get(k) == cond[k] for k in ("status", "reason", "message")):
            return
        rest = [c for c in conditions if c.get("type") != NAMESPACE_SCHEDULED]
        await self.kcp.dynamic(key.cluster).resource("v1", "namespaces", namespaced=False).patch(
            key.name, {"status": {"conditions": [*rest, cond]}}, subresource="status")

    async def _namespace(self, key: ObjectKey, namespace: Mapping[str, Any], target: str | None, why: str) -> None:
        resource = self.kcp.dynamic(key.cluster).resource("v1", "namespaces", namespaced=False)
        labels = (namespace.get("metadata") or {}).get("labels") or {}
        if target is not None and labels.get(ASSIGNMENT_LABEL) != target:
            await resource.patch(key.name, {"metadata": {"labels": {ASSIGNMENT_LABEL: target}}})
            log.info("namespace scheduled", cluster=key.cluster, namespace=key.name, target=target)
        await self._condition(key, namespace, scheduled_condition(_old_condition(namespace), target, why))

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


def _old_condition(namespace: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((c for c in (namespace.get("status") or {}).get("conditions") or []
                 if c.get("type") == NAMESPACE_SCHEDULED), None)
