"""A deleted Workspace takes its logical cluster with it, in the background, before its finalizer goes:
first the child's own Workspaces (each deleting its subtree), then every object but the namespaces and
service accounts a logical cluster is born with, through the registry (finalizers honoured: a CRD's removes
its objects, the garbage collector's wait), then the cluster's marker, and last the namespaces and service
accounts, removed from storage directly: kube forbids deleting `default` through the API, and with the
marker gone the namespace controller no longer makes system namespaces again. The child's LogicalCluster goes
last of all: until then it proves the child is this Workspace's, and a logical cluster a Workspace never
adopted (written before under that name) is left alone. Progress is the `WorkspaceContentDeleted` condition."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog

from kcp_apiserver.apimachinery.request import system_context
from kcp_apiserver.registry.builtin import NAMESPACE, SERVICE_ACCOUNT
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.registry.store import Registry, now_rfc3339
from kcp_apiserver.storage.etcd import KeyNotFound, RevisionConflict, Storage
from kcp_apiserver.storage.keys import cluster_marker, object_key, scope_prefix
from kcp_apiserver.tenancy.types import FINALIZER, LOGICAL_CLUSTER, LOGICAL_CLUSTER_NAME, WORKSPACE, child_cluster
from kcpcommon.controller import Result

log = structlog.get_logger("workspaces")

# removed from storage last, after the marker: the system namespaces kube will not let go through the API, their
# service accounts, and the LogicalCluster that proves the child is the Workspace's until the end
BORN_WITH = (NAMESPACE, SERVICE_ACCOUNT, LOGICAL_CLUSTER)
RECHECK_SECONDS = 0.5  # content still going: look again this soon
CONTENT_DELETED = "WorkspaceContentDeleted"


class WorkspaceDeletion:
    def __init__(self, storage: Storage, registry: Registry, resources: Callable[[str], Iterable[Resource]]) -> None:
        self.storage = storage
        self.registry = registry
        self.resources = resources  # what a logical cluster serves (built-ins and its CRDs' types)

    async def reconcile(self, parent: str, cached: Mapping[str, Any]) -> Result | None:
        if FINALIZER not in (cached["metadata"].get("finalizers") or []):
            return None
        child = child_cluster(parent, cached["metadata"]["name"])
        if await self._owned(child, cached["metadata"]["uid"]):
            remaining = await self._delete_content(child)
        else:  # never adopted (a logical cluster written before it): not its to delete
            remaining = ""
        if remaining:
            await self._progress(parent, cached, remaining)
            return Result(requeue_after=RECHECK_SECONDS)
        if await self._owned(child, cached["metadata"]["uid"]):
            await self._drop_marker(child)
            await self._drop_born_with(child)
            if any([await self.storage.count(scope_prefix(r.prefix, child, None)) for r in BORN_WITH]):
                return Result(requeue_after=RECHECK_SECONDS)
        ws = copy.deepcopy(dict(cached))
        ws["metadata"]["finalizers"] = [f for f in ws["metadata"]["finalizers"] if f != FINALIZER]
        await self.registry.update(WORKSPACE, parent, "", ws["metadata"]["name"], ws, ctx=system_context(parent))
        log.info("workspace deleted", cluster=parent, name=ws["metadata"]["name"], child=child)
        return None

    async def _delete_content(self, child: str) -> str:
        """One pass, in order; the first stage still holding objects is named (empty when all are gone)."""
        served = {r.prefix: r for r in self.resources(child)}
        last = {r.prefix for r in (WORKSPACE, *BORN_WITH)}
        stages = [("workspaces", [WORKSPACE]), ("objects", [r for p, r in served.items() if p not in last])]
        ctx = system_context(child)
        for stage, resources in stages:
            left = 0
            for res in resources:
                async for _ in self.registry.delete_pages(res, child, "", ctx=ctx):
                    pass  # page by page, nothing kept
                left += await self.storage.count(scope_prefix(res.prefix, child, None))
            if left:
                return f"{left} {stage}"
        return ""

    async def _owned(self, child: str, uid: str) -> bool:
        """The child is this Workspace's: its LogicalCluster (deleted last, as the proof) names it owner,
        or it is gone but for what goes last."""
        try:
            lc = await self.storage.get(object_key(LOGICAL_CLUSTER.prefix, child, "", LOGICAL_CLUSTER_NAME))
        except KeyNotFound:
            return not await self.storage.exists(cluster_marker(child))
        return bool(((lc.obj.get("spec") or {}).get("owner") or {}).get("uid") == uid)

    async def _drop_born_with(self, child: str) -> None:
        for prefix in (r.prefix for r in BORN_WITH):
            async for page in self.storage.scan_raw(scope_prefix(prefix, child, None)):
                for key, _, mod_revision in page.items:
                    try:
                        await self.storage.delete(key, mod_revision)
                    except (KeyNotFound, RevisionConflict):
                        pass  # gone already, or changed: the next pass sees it

    async def _drop_marker(self, child: str) -> None:
        try:
            marker = await self.storage.get(cluster_marker(child))
            await self.storage.delete(cluster_marker(child), marker.mod_revision)
        except KeyNotFound:
            pass

    async def _progress(self, parent: str, cached: Mapping[str, Any], remaining: str) -> None:
        message = f"Some content in the workspace remains: {remaining}"
        conditions = [c for c in (cached.get("status") or {}).get("conditions") or [] if c.get("type") != CONTENT_DELETED]
        if any(c.get("message") == message for c in (cached.get("status") or {}).get("conditions") or []):
            return
        ws = copy.deepcopy(dict(cached))
        ws["status"] = {**(ws.get("status") or {}), "conditions": [*conditions, {
            "type": CONTENT_DELETED, "status": "False", "reason": "ContentRemaining", "message": message,
            "lastTransitionTime": now_rfc3339()}]}
        await self.registry.update(WORKSPACE, parent, "", ws["metadata"]["name"], ws, subresource="status",
                                   ctx=system_context(parent))
