"""Every replica serves what the APIBindings of each logical cluster bound: the types of their
`status.boundResources` (built from the provider's APIResourceSchemas, stored under the export's identity) go
into the catalog beside the cluster's CRDs, and leave it when the binding is gone (while it is being deleted,
they are served but take no new objects, as a terminating CRD's). The group/resources a
cluster has bound are kept here too: a CRD of one of them is refused while the binding exists."""

from __future__ import annotations

from typing import Any, cast

import structlog

from kcp_apiserver.apiextensions.servable import Unservable
from kcp_apiserver.apis.claims import applied_claims
from kcp_apiserver.apis.schemas import bound_resources
from kcp_apiserver.apis.types import API_BINDING, API_EXPORT, API_RESOURCE_SCHEMA, BOUND, ClaimKey, export_reference
from kcp_apiserver.registry.catalog import Catalog
from kcp_apiserver.registry.informers import Informers, WatchCacheInformer, add_observer
from kcp_apiserver.registry.resource import Obj, Resource
from kcpcommon.frozen import thaw
from kcpcommon.keys import ObjectKey, cluster_of
from kcpcommon.sharedcache import HandlerRegistration

log = structlog.get_logger("apibindings")

GroupResource = tuple[str, str]
Key = tuple[str, str]  # (logical cluster, name)


def catalog_name(binding: str) -> str:
    """Where a binding's types sit in the catalog: beside CRDs, under a name no CRD can have."""
    return f"apibinding:{binding}"


def bound_group_resources(binding: Any) -> list[GroupResource]:
    listed = ((binding.get("status") or {}).get("boundResources")) or []
    return [(str(b.get("group", "")), str(b.get("resource", ""))) for b in listed if isinstance(b, dict)]


class BoundAPIs:
    """Follows APIBindings (and the schemas they bound) into the catalog."""

    def __init__(self, informers: Informers, catalog: Catalog) -> None:
        self.informers = informers
        self.catalog = catalog
        self.claims: dict[str, dict[GroupResource, str]] = {}  # cluster -> group/resource -> binding
        self.served: dict[Key, list[Resource]] = {}  # what each binding serves (its deletion empties these)
        self.terminating: set[Key] = set()  # bindings being deleted: their types take no new objects
        # (provider cluster, export) -> consumer cluster -> its Bound binding (one a cluster: a group/resource is
        # bound once per cluster)
        self.by_export: dict[Key, dict[str, str]] = {}
        # (provider cluster, export) -> consumer cluster -> the permission claims its Bound binding accepted
        self.permitted: dict[Key, dict[str, frozenset[ClaimKey]]] = {}
        self._exports: dict[Key, Key] = {}  # a Bound binding -> (provider cluster, export) it bound
        self._waiting: dict[Key, set[Key]] = {}  # a schema not seen yet -> the bindings that bound it
        self._schemas: WatchCacheInformer | None = None
        self._exports_informer: WatchCacheInformer | None = None  # read by the exports' virtual workspaces
        self._bindings: WatchCacheInformer | None = None
        self._handlers: list[HandlerRegistration] = []

    async def start(self) -> None:
        self._schemas = await self.informers.get(API_RESOURCE_SCHEMA)
        self._handlers.append(add_observer(self._schemas, self._schema_seen, name="apibindings:schemas"))
        await self._handlers[-1].wait_for_sync()
        self._exports_informer = await self.informers.get(API_EXPORT)
        self._bindings = await self.informers.get(API_BINDING)
        self._handlers.append(add_observer(self._bindings, self._observe, name="apibindings:serving"))
        await self._handlers[-1].wait_for_sync()

    async def stop(self) -> None:
        for handler in self._handlers:
            handler.remove()
        self._handlers = []

    def claimed_by(self, cluster: str, group: str, resource: str) -> str | None:
        """The binding of `cluster` that bound this group/resource, if one did."""
        return self.claims.get(cluster, {}).get((group, resource))

    def export(self, cluster: str, name: str) -> Obj | None:
        """An APIExport as this replica has seen it (None before `start`)."""
        found = self._exports_informer.indexer.get(ObjectKey(cluster, "", name)) if self._exports_informer else None
        return cast(Obj, found) if found is not None else None

    def schema(self, cluster: str, name: str) -> Obj | None:
        """An APIResourceSchema as this replica has seen it (None before `start`)."""
        found = self._schemas.indexer.get(ObjectKey(cluster, "", name)) if self._schemas is not None else None
        return cast(Obj, found) if found is not None else None

    def deleting(self, cluster: str, group: str, resource: str) -> str | None:
        """The binding of `cluster` that serves this group/resource and is being deleted, if there is one."""
        binding = self.claimed_by(cluster, group, resource)
        return binding if (cluster, binding) in self.terminating else None

    def _observe(self, binding: Obj, deleted: bool) -> None:
        key = (cluster_of(binding) or "", binding["metadata"]["name"])
        try:
            self._follow(key, binding, deleted)
        except Exception:  # one binding's bad state must not stop the others being served
            log.exception("following an APIBinding failed; not serving it", cluster=key[0], name=key[1])
            self.catalog.remove_crd(key[0], catalog_name(key[1]))
            self._unindex(key)

    def _follow(self, key: Key, binding: Obj, deleted: bool) -> None:
        cluster, name = key
        claims = self.claims.setdefault(cluster, {})
        for group_resource in [gr for gr, owner in claims.items() if owner == name]:
            del claims[group_resource]
        self.terminating.discard(key)
        self._unindex(key)
        if deleted:
            self.catalog.remove_crd(cluster, catalog_name(name))
            self.served.pop(key, None)
            if not claims:
                del self.claims[cluster]
            return
        for group_resource in bound_group_resources(binding):
            claims.setdefault(group_resource, name)
        status = binding.get("status") or {}
        if binding["metadata"].get("deletionTimestamp"):
            self.terminating.add(key)
        if status.get("phase") != BOUND:
            self.catalog.remove_crd(cluster, catalog_name(name))
            return
        # served while deleting, as kube serves a terminating CRD's objects: their finalizers can still finish
        self.served[key] = resources = self._resources(key, status)
        self.catalog.set_crd(cluster, catalog_name(name), resources)
        export = (str(status.get("apiExportClusterName") or ""), export_reference(binding, cluster)[1])
        self._exports[key] = export
        self.by_export.setdefault(export, {})[cluster] = name
        accepted = applied_claims(binding)
        if accepted:
            self.permitted.setdefault(export, {})[cluster] = accepted

    def _unindex(self, key: Key) -> None:
        export = self._exports.pop(key, None)
        if export is None:
            return
        consumers = self.by_export.get(export, {})
        if consumers.get(key[0]) == key[1]:
            del consumers[key[0]]
            permitted = self.permitted.get(export, {})
            permitted.pop(key[0], None)
            if not permitted:
                self.permitted.pop(export, None)
        if not consumers:
            self.by_export.pop(export, None)

    def _resources(self, key: Key, status: Obj) -> list[Resource]:
        assert self._schemas is not None
        provider = str(status.get("apiExportClusterName") or "")
        out: list[Resource] = []
        for bound in status.get("boundResources") or []:
            ref = bound.get("schema") or {}
            schema_key = (provider, str(ref.get("name") or ""))
            schema = self._schemas.indexer.get(ObjectKey(provider, "", schema_key[1]))
            if schema is None:  # bound by a replica that saw it already; served once it arrives here
                self._waiting.setdefault(schema_key, set()).add(key)
                continue
            try:
                out += bound_resources(thaw(schema), str(ref.get("identityHash") or ""), self.catalog.builtins)
            except Unservable as problem:
                log.warning("not serving a bound schema", cluster=key[0], name=key[1], schema=schema_key[1],
                            reason=problem.reason, message=problem.message)
        return out

    def _schema_seen(self, schema: Obj, deleted: bool) -> None:
        if deleted or self._bindings is None:
            return
        for cluster, name in self._waiting.pop((cluster_of(schema) or "", schema["metadata"]["name"]), set()):
            binding = self._bindings.indexer.get(ObjectKey(cluster, "", name))
            if binding is not None:
                self._observe(cast(Obj, binding), False)  # frozen dicts are dicts
