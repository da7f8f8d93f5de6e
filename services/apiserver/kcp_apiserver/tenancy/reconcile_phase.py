"""A new Workspace's way to Ready, as kcp's phases name it: Scheduling (its logical cluster is named and
given a URL), Initializing (the child's LogicalCluster `cluster` is written with its type and that type's
initializers, the creator made its admin), Ready once every initializer has removed itself from the
LogicalCluster's `status.initializers` (the Workspace's `status.initializers` shows those left). The server
is the initializer `system:apibindings` itself: it makes the type's defaultAPIBindings and lifts it once they
are Bound. Each step is one write; the next reconcile sees it and takes the following step."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import structlog

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import system_context
from kcp_apiserver.registry.builtin import NAMESPACE
from kcp_apiserver.registry.builtin.rbac import RESOURCES as RBAC_RESOURCES
from kcp_apiserver.registry.clusters import SYSTEM_NAMESPACES
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry, now_rfc3339
from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.keys import cluster_marker
from kcp_apiserver.tenancy.types import (
    APIBINDINGS_INITIALIZER,
    FINALIZER,
    INITIALIZING,
    LOGICAL_CLUSTER,
    LOGICAL_CLUSTER_NAME,
    OWNER_ANNOTATION,
    READY,
    SCHEDULING,
    TYPE_ANNOTATION,
    WORKSPACE,
    child_cluster,
)
from kcp_apiserver.tenancy.workspacetypes import (
    UNIVERSAL_TYPE,
    Lookup,
    ResolvedType,
    UnresolvableType,
    resolve,
    spec_type,
)
from kcpcommon.controller import Result

log = structlog.get_logger("workspaces")

CLUSTER_ROLE_BINDING = next(r for r in RBAC_RESOURCES if r.kind == "ClusterRoleBinding")
OWNER_BINDING = "workspace-admin"  # the creator's cluster-admin binding in the child (kcp: workspace-admin)
DEFAULT_TYPE = UNIVERSAL_TYPE.as_spec()  # what a Workspace made before WorkspaceTypes records
BOUND = "Bound"  # an APIBinding's phase once its types are served (apis.types, a sibling package)
WAIT_FOR_BINDINGS = 5.0  # seconds between looks at default APIBindings beside their changes' events
WAIT_FOR_TYPE = 10.0  # seconds before a workspace whose type went missing is looked at again


def ready_condition(status: str, reason: str = "", message: str = "") -> Obj:
    cond = {"type": "Ready", "status": status, "lastTransitionTime": now_rfc3339()}
    return {**cond, **({"reason": reason} if reason else {}), **({"message": message} if message else {})}


def initializing_condition(initializers: list[str]) -> Obj:
    return ready_condition("False", "Initializing",
                           "waiting for initializers: " + ", ".join(initializers) if initializers else "")


class WorkspacePhases:
    def __init__(self, storage: Storage, registry: Registry, *, base_url: str, types: Lookup,
                 api_binding: Resource | None = None) -> None:
        self.storage = storage
        self.registry = registry
        self.base_url = base_url.rstrip("/")
        self.types = types
        self.api_binding = api_binding  # None: this server binds no APIs, and no type may ask it to

    async def reconcile(self, parent: str, cached: Mapping[str, Any]) -> Result | None:
        ws = copy.deepcopy(dict(cached))  # never edit the informer's object
        name = ws["metadata"]["name"]
        child = child_cluster(parent, name)
        spec = ws.setdefault("spec", {})
        finalizers = ws["metadata"].setdefault("finalizers", [])
        if FINALIZER not in finalizers or spec.get("cluster") != child or not spec.get("URL"):
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
            spec.update(cluster=child, URL=f"{self.base_url}/clusters/{child}")
            spec.setdefault("type", DEFAULT_TYPE)
            await self.registry.update(WORKSPACE, parent, "", name, ws, ctx=system_context(parent))
            return None
        phase = (ws.get("status") or {}).get("phase")
        if not phase:
            await self._set_status(parent, ws, SCHEDULING, ready_condition("False", "Scheduling"))
        elif phase == SCHEDULING:
            if await self._taken(child, ws["metadata"]["uid"]):
                await self._set_status(parent, ws, SCHEDULING, ready_condition(
                    "False", "LogicalClusterExists", f'logical cluster "{child}" exists and belongs to no '
                    "workspace: delete its content or choose another name"))
                return None  # never adopted: its creator would become admin of what others wrote
            try:
                resolved = await self._type_of(parent, ws)
            except UnresolvableType as exc:
                await self._set_status(parent, ws, SCHEDULING, ready_condition("False", "WorkspaceTypeInvalid",
                                                                                str(exc)))
                return Result(requeue_after=WAIT_FOR_TYPE)
            initializers = await self._make_child(parent, ws, child, resolved)
            ws["status"] = {**(ws.get("status") or {}), "initializers": initializers}
            await self._set_status(parent, ws, INITIALIZING, initializing_condition(initializers))
        elif phase == INITIALIZING:
            return await self._initializing(parent, ws, child)
        return None

    async def _initializing(self, parent: str, ws: Obj, child: str) -> Result | None:
        """Ready once no initializer is left; the server's own one is worked here."""
        lc = await self.registry.get(LOGICAL_CLUSTER, child, "", LOGICAL_CLUSTER_NAME)
        left = list((lc.get("status") or {}).get("initializers") or [])
        wait: Result | None = None
        if APIBINDINGS_INITIALIZER in left:
            try:
                bound = await self._default_bindings_bound(parent, ws, child)
            except UnresolvableType as exc:  # the type went after the workspace was scheduled
                await self._set_status(parent, ws, INITIALIZING, ready_condition(
                    "False", "WorkspaceTypeInvalid", str(exc)))
                return Result(requeue_after=WAIT_FOR_TYPE)
            if bound:
                left.remove(APIBINDINGS_INITIALIZER)
                lc = copy.deepcopy(lc)
                lc["status"] = {**(lc.get("status") or {}), "initializers": left}
                await self.registry.update(LOGICAL_CLUSTER, child, "", LOGICAL_CLUSTER_NAME, lc, subresource="status",
                                           ctx=system_context(child))
            else:
                wait = Result(requeue_after=WAIT_FOR_BINDINGS)
        if left:
            if (ws.get("status") or {}).get("initializers") != left:
                ws["status"] = {**(ws.get("status") or {}), "initializers": left}
                await self._set_status(parent, ws, INITIALIZING, initializing_condition(left))
            return wait  # an initializer lifting itself updates the LogicalCluster, which requeues us
        await self._child_ready(child)
        ws["status"] = {**(ws.get("status") or {}), "initializers": []}
        await self._set_status(parent, ws, READY, ready_condition("True"))
        log.info("workspace ready", cluster=parent, name=ws["metadata"]["name"])
        return None

    async def _default_bindings_bound(self, parent: str, ws: Obj, child: str) -> bool:
        """The type's defaultAPIBindings made in the child (named after their export); True once all are Bound."""
        if self.api_binding is None:
            return True
        bound = True
        for path, export in (await self._type_of(parent, ws)).default_api_bindings():
            try:
                binding = await self.registry.get(self.api_binding, child, "", export)
            except st.APIError as exc:
                if exc.code != 404:
                    raise
                await self._create_once(self.api_binding, child, {
                    "apiVersion": self.api_binding.api_version, "kind": self.api_binding.kind,
                    "metadata": {"name": export},
                    "spec": {"reference": {"export": {"path": path, "name": export}}}})
                bound = False
                continue
            bound = bound and (binding.get("status") or {}).get("phase") == BOUND
        return bound

    async def _type_of(self, parent: str, ws: Obj) -> ResolvedType:
        """The Workspace's type (admission filled its path in) with every type it extends."""
        ref = spec_type(ws) or UNIVERSAL_TYPE
        return await resolve(self.types, parent, ref.name, ref.path)

    async def _taken(self, child: str, uid: str) -> bool:
        """The child's name is a logical cluster written before (a flat name) and not by this Workspace."""
        if not await self.storage.exists(cluster_marker(child)):
            return False
        try:
            lc = await self.registry.get(LOGICAL_CLUSTER, child, "", LOGICAL_CLUSTER_NAME)
        except st.APIError as exc:
            if exc.code != 404:
                raise
            return True
        return bool(((lc.get("spec") or {}).get("owner") or {}).get("uid") != uid)

    async def _set_status(self, parent: str, ws: Obj, phase: str, condition: Obj) -> None:
        ws["status"] = {**(ws.get("status") or {}), "phase": phase, "conditions": [condition]}
        await self.registry.update(WORKSPACE, parent, "", ws["metadata"]["name"], ws, subresource="status",
                                   ctx=system_context(parent))

    async def _make_child(self, parent: str, ws: Obj, child: str, resolved: ResolvedType) -> list[str]:
        """The child's LogicalCluster (owned by the Workspace, of its type, with the type's initializers), and
        the creator's admin binding, before Ready. Returns the initializers."""
        meta = ws["metadata"]
        initializers = resolved.initializers()
        logical_cluster = {
            "apiVersion": LOGICAL_CLUSTER.api_version, "kind": LOGICAL_CLUSTER.kind,
            "metadata": {"name": LOGICAL_CLUSTER_NAME, "annotations": {
                OWNER_ANNOTATION: meta.get("annotations", {}).get(OWNER_ANNOTATION, ""),
                TYPE_ANNOTATION: str(resolved.ref)}},
            "spec": {"owner": {"apiVersion": WORKSPACE.api_version, "resource": WORKSPACE.plural,
                               "name": meta["name"], "cluster": parent, "uid": meta["uid"]},
                     "initializers": initializers}}
        await self._create_once(LOGICAL_CLUSTER, child, logical_cluster)
        lc = copy.deepcopy(await self.registry.get(LOGICAL_CLUSTER, child, "", LOGICAL_CLUSTER_NAME))
        if not (lc.get("status") or {}).get("phase"):
            lc["status"] = {"phase": INITIALIZING, "initializers": initializers}
            await self.registry.update(LOGICAL_CLUSTER, child, "", LOGICAL_CLUSTER_NAME, lc, subresource="status",
                                       ctx=system_context(child))
        for namespace in SYSTEM_NAMESPACES:  # a replica that saw a same-named child deleted would not remake them
            await self._create_once(NAMESPACE, child, {"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": namespace}})
        owner = json.loads(meta.get("annotations", {}).get(OWNER_ANNOTATION) or "{}")
        if owner.get("username"):
            binding = {"apiVersion": CLUSTER_ROLE_BINDING.api_version, "kind": CLUSTER_ROLE_BINDING.kind,
                       "metadata": {"name": OWNER_BINDING},
                       "roleRef": {"apiGroup": CLUSTER_ROLE_BINDING.group, "kind": "ClusterRole",
                                   "name": "cluster-admin"},
                       "subjects": [{"apiGroup": CLUSTER_ROLE_BINDING.group, "kind": "User",
                                     "name": owner["username"]}]}
            await self._create_once(CLUSTER_ROLE_BINDING, child, binding)
        return initializers

    async def _child_ready(self, child: str) -> None:
        lc = copy.deepcopy(await self.registry.get(LOGICAL_CLUSTER, child, "", LOGICAL_CLUSTER_NAME))
        if (lc.get("status") or {}).get("phase") == READY:
            return
        lc["status"] = {"phase": READY, "URL": f"{self.base_url}/clusters/{child}", "initializers": [],
                        "conditions": [ready_condition("True")]}
        await self.registry.update(LOGICAL_CLUSTER, child, "", LOGICAL_CLUSTER_NAME, lc, subresource="status",
                                   ctx=system_context(child))

    async def _create_once(self, res: Resource, cluster: str, obj: Obj) -> None:
        try:
            await self.registry.create(res, cluster, "", obj, ctx=system_context(cluster))
        except st.APIError as exc:
            if exc.code != 409:  # 409: an earlier attempt made it
                raise
