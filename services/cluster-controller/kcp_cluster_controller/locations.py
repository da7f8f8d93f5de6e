"""Locations: each groups the SyncTargets of its logical cluster (a compute workspace) that its
`instanceSelector` selects, and shows in status how many it selects (`instances`), how many of them are
Ready and schedulable (`availableInstances`) and what those offer (`allocatable` and `capacity`, summed).
A SyncTarget change requeues every Location of its logical cluster; the status is written only when it
changes. A selector that cannot be read is reported in the Location's Ready condition, not retried."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Result
from kcpcommon.errors import APINotFoundError
from kcpcommon.keys import ObjectKey
from kcpcommon.labelselector import selector_matches
from kcpcommon.store import CLUSTER_INDEX, Indexer

from . import conditions as cond
from .exports import Merged
from .physical import sum_resources

log = structlog.get_logger("kcp-cluster-controller.locations")

API_VERSION = "scheduling.kcp.io/v1alpha1"
PLURAL = "locations"
Obj = Mapping[str, Any]


def _ready(target: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (target.get("status") or {}).get("conditions") or [])


def location_status(location: Obj, targets: Iterable[Obj], now: datetime) -> dict[str, Any]:
    """The status a Location should have over the SyncTargets of its logical cluster."""
    old = dict(location.get("status") or {})
    try:
        selected = [t for t in targets if not (t.get("metadata") or {}).get("deletionTimestamp")
                    and selector_matches((location.get("spec") or {}).get("instanceSelector"),
                                         (t.get("metadata") or {}).get("labels"))]
    except ValueError as exc:
        ready = cond.condition("Ready", cond.FALSE, "InvalidSelector", f"spec.instanceSelector: {exc}")
        return {**old, "conditions": cond.merge(old.get("conditions"), [ready], now)}
    available = [t for t in selected if _ready(t) and not (t.get("spec") or {}).get("unschedulable")]
    if available:
        ready = cond.condition("Ready", cond.TRUE, "InstancesAvailable",
                               f"{len(available)} of {len(selected)} SyncTargets are Ready and schedulable")
    else:
        ready = cond.condition("Ready", cond.FALSE, "NoInstancesAvailable",
                               f"none of the {len(selected)} SyncTargets selected is Ready and schedulable")
    return {"instances": len(selected), "availableInstances": len(available),
            "allocatable": sum_resources((t.get("status") or {}).get("allocatable") or {} for t in available),
            "capacity": sum_resources((t.get("status") or {}).get("capacity") or {} for t in available),
            "conditions": cond.merge(old.get("conditions"), [ready], now)}


class LocationReconciler:
    def __init__(self, kcp: ClientFactory, locations: Indexer | Merged, targets: Indexer | Merged,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.kcp = kcp
        self.locations = locations
        self.targets = targets
        self.now = now

    def keys_in(self, cluster: str) -> list[ObjectKey]:
        return sorted(self.locations.index_keys(CLUSTER_INDEX, cluster))

    async def reconcile(self, key: ObjectKey) -> Result | None:
        location = self.locations.get(key)
        if location is None:
            return None
        status = location_status(location, self.targets.by_index(CLUSTER_INDEX, key.cluster), self.now())
        if status == location.get("status"):
            return None
        body = {"apiVersion": API_VERSION, "kind": "Location",
                "metadata": {"name": key.name, "resourceVersion": location["metadata"]["resourceVersion"]},
                "status": status}
        try:
            await self.kcp.dynamic(key.cluster).resource(API_VERSION, PLURAL, namespaced=False).replace(
                body, subresource="status")
        except APINotFoundError:
            return None  # deleted meanwhile
        log.info("location status", cluster=key.cluster, name=key.name, instances=status.get("instances"),
                 available=status.get("availableInstances"))
        return None
