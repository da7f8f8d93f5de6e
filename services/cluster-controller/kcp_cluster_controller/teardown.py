"""What a deleted SyncTarget leaves behind, cleared: the syncer's upstream finalizers and downstream namespaces.

The syncer holds each upstream object it synced with finalizer `workload.kcp.io/syncer-<target>` until
its downstream copy is gone; with the SyncTarget deleted no syncer will ever lift it, so the
controller does, or those objects could never be deleted. Downstream, the syncer's namespaces carry
its owner label (a hash of logical cluster and SyncTarget); deleting them removes what it created,
unless the SyncTarget asked to keep it.
"""

from __future__ import annotations

import structlog

from kcpcommon.dynamic import DynamicClient
from kcpcommon.errors import APIClientError, APINotFoundError
from kcpsyncer import ASSIGNMENT_LABEL, syncer_finalizer
from kcpsyncer.names import OWNER_LABEL, owner

from .physical import preferred_version, split_resource

log = structlog.get_logger("kcp-cluster-controller.teardown")


async def release_upstream(kcp: DynamicClient, resources: tuple[str, ...], sync_target: str) -> int:
    """Lift the syncer's finalizer from the objects assigned to `sync_target`; returns how many."""
    finalizer = syncer_finalizer(sync_target)
    released = 0
    for resource in resources:
        plural, group = split_resource(resource)
        try:
            version = await preferred_version(kcp, group)
            api_version = f"{group}/{version}" if group else version
            listed = await kcp.resource(api_version, plural, namespaced=False).list(
                label_selector=ASSIGNMENT_LABEL + "=" + sync_target)
        except APIClientError:
            continue  # not served (any more): nothing of it to release
        for item in listed.get("items") or []:
            meta = item.get("metadata") or {}
            finalizers = meta.get("finalizers") or []
            if finalizer not in finalizers:
                continue
            namespace = meta.get("namespace")
            handle = kcp.resource(api_version, plural, namespaced=bool(namespace))
            try:
                await handle.patch(meta["name"], [
                    {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
                    {"op": "replace", "path": "/metadata/finalizers",
                     "value": [f for f in finalizers if f != finalizer]}], namespace=namespace, patch_type="json")
                released += 1
            except APINotFoundError:
                pass
    return released


async def remove_downstream(physical: DynamicClient, logical_cluster: str, sync_target: str) -> list[str]:
    """Delete the namespaces the syncer of (logical cluster, SyncTarget) created; returns their names."""
    namespaces = physical.resource("v1", "namespaces", namespaced=False)
    listed = await namespaces.list(label_selector=f"{OWNER_LABEL}={owner(logical_cluster, sync_target)}")
    removed = []
    for item in listed.get("items") or []:
        name = item["metadata"]["name"]
        try:
            await namespaces.delete(name)
            removed.append(name)
        except APINotFoundError:
            pass
    return removed
