"""A cordoned or evicted SyncTarget's `status.eviction`: what of the workspaces is still on it (issue 25's
decommission).

kcp's two knobs, as kube's for a Node: `spec.unschedulable` cordons (what is there stays, nothing new comes:
`targets.view`), `spec.evictAfter` drains once passed (every workspace's namespaces and split Deployments move off,
make-before-break). The admin deciding when a physical cluster may go needs to see the drain progress in one place,
and the splitter is the one that knows what is still assigned there across workspaces: the namespaces placed (or
draining) on it, by their placed labels, and the split Deployments with a share on it, with their replicas. The
SyncTarget is `Evicted` once none is left and its syncer, which removes what it made downstream as things leave,
reports it serves no workspace any more (`status.servedWorkspaces`). The field is the splitter's alone (a merge
patch of `status.eviction`), so the cluster controller's conditions and the syncer's heartbeat are left as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Result
from kcpcommon.errors import APINotFoundError
from kcpcommon.keys import ASSIGNMENT_LABEL, ObjectKey, cluster_of, sync_target_key
from kcpcommon.kubetime import format_time
from kcpcommon.store import CLUSTER_INDEX, CLUSTER_NAMESPACE_INDEX, IndexReader, cluster_namespace_value

from .names import COMPONENT, SYNC_TARGETS
from .placements import PLACED_INDEX, placed_keys
from .shares import is_root, shares_of
from .targets import view

log = structlog.get_logger(COMPONENT)

CORDONED, EVICTING, EVICTED = "Cordoned", "Evicting", "Evicted"

Obj = Mapping[str, Any]


@dataclass
class Left:
    """What of the workspaces is still assigned to one SyncTarget."""

    workspaces: set[str] = field(default_factory=set)
    namespaces: int = 0
    deployments: int = 0
    replicas: int = 0

    def describe(self) -> str:
        return (f"{self.deployments} Deployment share(s) ({self.replicas} replicas) in {self.namespaces} namespace(s) "
                f"of {len(self.workspaces)} workspace(s)")


def _labels(obj: Obj) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("labels") or {}


def split_shares(deployment: Obj) -> dict[str, int]:
    """A split Deployment's shares by SyncTarget ({} for a pinned one or anything else)."""
    return shares_of(deployment) if is_root(deployment) else {}


def share_on(deployment: Obj, target: str) -> int:
    """The replicas a split Deployment runs on `target` (0 once it is being deleted)."""
    if (deployment.get("metadata") or {}).get("deletionTimestamp"):
        return 0
    return split_shares(deployment).get(target, 0)


def left_on(cluster: str, target: str, *, namespaces: IndexReader, deployments: IndexReader) -> Left:
    """What is assigned to SyncTarget `target` of workspace `cluster`: the namespaces of any workspace placed (or
    draining) on it, the namespaces of its own workspace assigned to it by name, and the shares in them."""
    left = Left()
    located: list[tuple[str, str]] = []
    for namespace in namespaces.by_index(PLACED_INDEX, sync_target_key(cluster, target)):
        located.append((str(cluster_of(namespace)), str((namespace.get("metadata") or {}).get("name"))))
    for namespace in namespaces.by_index(CLUSTER_INDEX, cluster):
        if _labels(namespace).get(ASSIGNMENT_LABEL) == target and not placed_keys(namespace):
            located.append((cluster, str((namespace.get("metadata") or {}).get("name"))))
    for workspace, name in located:
        left.namespaces += 1
        left.workspaces.add(workspace)
        for deployment in deployments.by_index(CLUSTER_NAMESPACE_INDEX, cluster_namespace_value(workspace, name)):
            replicas = share_on(deployment, target)
            if replicas > 0:
                left.deployments += 1
                left.replicas += replicas
    return left


def eviction_status(target: Obj, left: Left, *, now: datetime, grace_period: float,
                    previous: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The `status.eviction` of `target` (None: neither cordoned nor evicted), its transition time kept while the
    phase stays."""
    name = str((target.get("metadata") or {}).get("name"))
    seen = view([target], now=now, grace_period=grace_period)
    served = (target.get("status") or {}).get("servedWorkspaces")
    if seen.lost.get(name, "").startswith("evicted after"):
        if left.namespaces or left.deployments or served:
            phase = EVICTING
            message = f"moving off: {left.describe()} still here"
            if served:
                message += f"; its syncer still serves {served} workspace(s)"
        else:
            phase = EVICTED
            message = ("nothing of any workspace is assigned here and its syncer serves none: the physical cluster "
                       "holds none of kcp's workloads and the SyncTarget can be deleted")
    elif (target.get("spec") or {}).get("unschedulable"):
        phase = CORDONED
        message = (f"nothing new is placed here; {left.describe()} stay until it is evicted "
                   "(spec.evictAfter)")
    else:
        return None
    previous = previous or {}
    since = previous.get("lastTransitionTime") if previous.get("phase") == phase else None
    return {"phase": phase, "workspaces": len(left.workspaces), "namespaces": left.namespaces,
            "deployments": left.deployments, "replicas": left.replicas, "message": message,
            "lastTransitionTime": since or format_time(now)}


def _same(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
    if old is None or new is None:
        return old is new or (not old and not new)
    strip = ("lastTransitionTime",)
    return {k: v for k, v in old.items() if k not in strip} == {k: v for k, v in new.items() if k not in strip}


class EvictionReporter:
    """The `evictions` controller, keyed by SyncTarget."""

    def __init__(self, kcp: ClientFactory, *, targets: IndexReader, namespaces: IndexReader,
                 deployments: IndexReader, grace_period: float, now: Callable[[], datetime]) -> None:
        self.kcp = kcp
        self.targets = targets
        self.namespaces = namespaces
        self.deployments = deployments
        self.grace_period = grace_period
        self._now = now

    async def reconcile(self, key: ObjectKey) -> Result | None:
        target = self.targets.get(key)
        if target is None:
            return None
        now = self._now()
        previous = (target.get("status") or {}).get("eviction")
        wanted = eviction_status(target, left_on(key.cluster, key.name, namespaces=self.namespaces,
                                                 deployments=self.deployments),
                                 now=now, grace_period=self.grace_period, previous=previous)
        if not _same(previous, wanted):
            try:
                await self.kcp.dynamic(key.cluster).resource(*SYNC_TARGETS, namespaced=False).patch(
                    key.name, {"status": {"eviction": wanted}}, subresource="status")
            except APINotFoundError:
                return None
            if (previous or {}).get("phase") != (wanted or {}).get("phase"):
                log.info("sync target eviction", cluster=key.cluster, name=key.name,
                         phase=(wanted or {}).get("phase"), message=(wanted or {}).get("message"))
        evict_at = view([target], now=now, grace_period=self.grace_period).recheck_after
        return Result(requeue_after=evict_at + 0.1) if evict_at is not None else None


def evicting(target: Obj) -> bool:
    """Whether the evictions controller has anything to say about `target` (or to take back)."""
    spec = target.get("spec") or {}
    return bool(spec.get("unschedulable") or spec.get("evictAfter") or (target.get("status") or {}).get("eviction"))


def eviction_facts(target: Obj) -> tuple[Any, ...]:
    spec, status = target.get("spec") or {}, target.get("status") or {}
    return (spec.get("unschedulable"), spec.get("evictAfter"), status.get("servedWorkspaces"),
            status.get("eviction"), (target.get("metadata") or {}).get("deletionTimestamp"))
