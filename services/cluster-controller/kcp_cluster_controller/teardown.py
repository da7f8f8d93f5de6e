"""What a deleted SyncTarget leaves behind, cleared: the syncer's upstream finalizers and downstream namespaces.

The syncer holds each upstream object it synced with finalizer `workload.kcp.io/syncer-<target>` until
its downstream copy is gone; with the SyncTarget deleted no syncer will ever lift it, so the
controller does, or those objects could never be deleted. Downstream, the syncer's namespaces and the
cluster-scoped objects it made (a tenant's StorageClasses...) carry its owner label (a hash of logical
cluster and SyncTarget); deleting them removes what it created, unless the SyncTarget asked to keep it.
"""

from __future__ import annotations

import structlog

from kcpcommon.dynamic import DynamicClient
from kcpcommon.errors import APIClientError, APINotFoundError
from kcpsyncer import ASSIGNMENT_LABEL, syncer_finalizer
from kcpsyncer.names import OWNER_LABEL, STATE_SYNC, owner, state_label

from .physical import preferred_version, split_resource

log = structlog.get_logger("kcp-cluster-controller.teardown")


async def release_upstream(kcp: DynamicClient, resources: tuple[str, ...], sync_target: str) -> int:
    """Lift the syncer's finalizer from the objects assigned to `sync_target` (by the assignment label, or by
    its state label, as the splitter places the objects its Deployments use); returns how many."""
    finalizer = syncer_finalizer(sync_target)
    released = 0
    selectors = (f"{ASSIGNMENT_LABEL}={sync_target}", f"{state_label(sync_target)}={STATE_SYNC}")
    for resource in resources:
        plural, group = split_resource(resource)
        try:
            version = await preferred_version(kcp, group)
            api_version = f"{group}/{version}" if group else version
            found = {(item.get("metadata") or {}).get("uid"): item for selector in selectors
                     for item in (await kcp.resource(api_version, plural, namespaced=False).list(
                         label_selector=selector)).get("items") or []}  # one object may carry both labels
            items = list(found.values())
        except APIClientError:
            continue  # not served (any more): nothing of it to release
        for item in items:
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


async def remove_downstream(physical: DynamicClient, logical_cluster: str, sync_target: str,
                            resources: tuple[str, ...] = ()) -> list[str]:
    """Delete the namespaces the syncer of (logical cluster, SyncTarget) created, and its cluster-scoped objects
    of `resources`; returns what went (`<plural>.<group>/<name>` for the cluster-scoped ones)."""
    selector = f"{OWNER_LABEL}={owner(logical_cluster, sync_target)}"
    removed = []
    for resource in resources:
        plural, group = split_resource(resource)
        try:
            version = await preferred_version(physical, group)
            handle = physical.resource(f"{group}/{version}" if group else version, plural, namespaced=False)
            listed = await handle.list(label_selector=selector)
        except APIClientError:
            continue  # not served there: nothing of it to remove
        for item in listed.get("items") or []:
            if item["metadata"].get("namespace"):
                continue  # goes with its namespace
            try:
                await handle.delete(item["metadata"]["name"])
                removed.append(f"{resource}/{item['metadata']['name']}")
            except APINotFoundError:
                pass
    namespaces = physical.resource("v1", "namespaces", namespaced=False)
    listed = await namespaces.list(label_selector=selector)
    for item in listed.get("items") or []:
        name = item["metadata"]["name"]
        try:
            await namespaces.delete(name)
            removed.append(name)
        except APINotFoundError:
            pass
    return removed
