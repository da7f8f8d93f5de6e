"""The shared-APIs controller's wiring (the leader runs it): APIExports get their identity
(`reconcile_export`), APIBindings are bound (`reconcile_binding`) and, when deleted, take their objects with
them (`reconcile_deletion`). A binding that cannot be bound yet waits on the logical cluster where a change
may help (the provider's exports and schemas, or the consumer's bindings and CRDs) and is looked at again
when something there changes, and every little while besides."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import structlog
from prometheus_client import CollectorRegistry

from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import system_context
from kcp_apiserver.apis.reconcile_binding import Bind, decide, wanted_status
from kcp_apiserver.apis.reconcile_deletion import delete_bound_objects, drop_finalizer
from kcp_apiserver.apis.reconcile_export import reconcile_export
from kcp_apiserver.apis.serving import BoundAPIs, GroupResource
from kcp_apiserver.apis.types import API_BINDING, API_EXPORT, API_RESOURCE_SCHEMA, FINALIZER, export_reference
from kcp_apiserver.registry.informers import Informers, WatchCacheInformer, add_observer
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import Storage
from kcpcommon.controller import Controller, Result
from kcpcommon.frozen import thaw
from kcpcommon.keys import ObjectKey, cluster_of
from kcpcommon.sharedcache import HandlerRegistration
from kcpcommon.tasks import cancel_and_wait, spawn

log = structlog.get_logger("apibindings")
RETRY_SECONDS = 10.0  # a binding not bound yet is looked at again this often, whatever happens
CLEANUP_SECONDS = 1.0  # bound objects with finalizers of their own are looked at again this often


class APIBindingController:
    def __init__(self, storage: Storage, informers: Informers, registry: Registry, bound: BoundAPIs,
                 builtins: Iterable[Resource], *, metrics: CollectorRegistry | None = None) -> None:
        self.storage = storage
        self.informers = informers
        self.registry = registry
        self.bound = bound
        self.builtins = tuple(builtins)
        self._secrets = next(r for r in self.builtins if (r.group, r.plural) == ("", "secrets"))
        self.exports: Controller[ObjectKey] = Controller("apiexport", self._reconcile_export, registry=metrics,
                                                         component="kcp_apiserver")
        self.bindings: Controller[ObjectKey] = Controller("apibinding", self._reconcile_binding, registry=metrics,
                                                          component="kcp_apiserver")
        # what this leader bound, before its own status writes come back through the informer
        self.claims: dict[str, dict[GroupResource, str]] = {}
        self.waiting: dict[str, set[ObjectKey]] = {}  # logical cluster -> bindings a change there may help
        # export -> consumer -> why it stays on an older schema (this leader's decisions; the export's status)
        self.held: dict[ObjectKey, dict[str, str]] = {}
        self._held_by: dict[ObjectKey, ObjectKey] = {}  # binding -> the export it is held back on
        self._latest: dict[ObjectKey, tuple[str, str]] = {}  # export -> its latest schemas and claims, last seen
        self._informers: dict[str, WatchCacheInformer] = {}
        self._handlers: list[HandlerRegistration] = []
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        for res in (API_EXPORT, API_RESOURCE_SCHEMA, API_BINDING, CRD):
            self._informers[res.plural] = await self.informers.get(res)
        self._handlers = [
            add_observer(self._informers[API_EXPORT.plural], self._export_seen, name="controller:apiexport"),
            add_observer(self._informers[API_RESOURCE_SCHEMA.plural], self._wake_on, name="controller:apischemas"),
            add_observer(self._informers[API_BINDING.plural], self._binding_seen, name="controller:apibinding"),
            add_observer(self._informers[CRD.plural], self._wake_on, name="controller:apibinding-crds")]
        self._tasks = [spawn(self.exports.start(wait_for=[self._handlers[0].wait_for_sync()]), name="controller:apiexport"),
                       spawn(self.bindings.start(wait_for=[h.wait_for_sync() for h in self._handlers]),
                             name="controller:apibinding")]

    async def stop(self) -> None:
        for handler in self._handlers:
            handler.remove()
        await cancel_and_wait(*self._tasks)

    # -- events ---------------------------------------------------------------------------------

    def _export_seen(self, export: Obj, deleted: bool) -> None:
        key = ObjectKey(cluster_of(export) or "", "", export["metadata"]["name"])
        if not deleted:
            self.exports.enqueue(key)
        spec = export.get("spec") or {}
        latest = (repr(spec.get("latestResourceSchemas")), repr(spec.get("permissionClaims")))
        if deleted:
            self._latest.pop(key, None)
        elif self._latest.setdefault(key, latest) != latest:  # evolved: every binding follows, or is held
            self._latest[key] = latest
            for consumer, name in self.bound.by_export.get((key.cluster, key.name), {}).items():
                self.bindings.enqueue(ObjectKey(consumer, "", name))
        self._wake_on(export, deleted)

    def _binding_seen(self, binding: Obj, deleted: bool) -> None:
        key = ObjectKey(cluster_of(binding) or "", "", binding["metadata"]["name"])
        if deleted:
            self._release(key)
            self._wake(key.cluster)
        else:
            self.bindings.enqueue(key)

    def _wake_on(self, obj: Obj, deleted: bool) -> None:
        self._wake(cluster_of(obj) or "")

    def _wake(self, cluster: str) -> None:
        for key in self.waiting.pop(cluster, set()):
            self.bindings.enqueue(key)

    # -- lookups (reconcile_binding.Lookups) ------------------------------------------------------

    def _get(self, res: Resource, cluster: str, name: str) -> Obj | None:
        found = self._informers[res.plural].indexer.get(ObjectKey(cluster, "", name))
        return thaw(found) if found is not None else None

    def export(self, cluster: str, name: str) -> Obj | None:
        return self._get(API_EXPORT, cluster, name)

    def schema(self, cluster: str, name: str) -> Obj | None:
        return self._get(API_RESOURCE_SCHEMA, cluster, name)

    def has_crd(self, cluster: str, name: str) -> bool:
        return self._informers[CRD.plural].indexer.get(ObjectKey(cluster, "", name)) is not None

    def claimed_by(self, cluster: str, group: str, resource: str) -> str | None:
        mine = self.claims.get(cluster, {}).get((group, resource))
        return mine if mine is not None else self.bound.claimed_by(cluster, group, resource)

    def _release(self, key: ObjectKey) -> None:
        claims = self.claims.get(key.cluster, {})
        for group_resource in [gr for gr, owner in claims.items() if owner == key.name]:
            del claims[group_resource]
        self._hold(key, None, None)

    def _hold(self, key: ObjectKey, export: ObjectKey | None, why: str | None) -> None:
        """Note whether binding `key` stays on an older schema of `export`; the export's status follows."""
        before = self._held_by.pop(key, None)
        if before is not None and (before != export or why is None):
            consumers = self.held.get(before, {})
            consumers.pop(key.cluster, None)
            if not consumers:
                self.held.pop(before, None)
            self.exports.enqueue(before)
        if export is not None and why is not None:
            self._held_by[key] = export
            consumers = self.held.setdefault(export, {})
            if consumers.get(key.cluster) != why:
                consumers[key.cluster] = why
                self.exports.enqueue(export)

    # -- reconcile ------------------------------------------------------------------------------

    async def _reconcile_export(self, key: ObjectKey) -> Result | None:
        export = self.export(key.cluster, key.name)
        if export is not None and not await reconcile_export(self.registry, key.cluster, export,
                                                             dict(self.held.get(key, {})), self._secret):
            return Result(requeue_after=RETRY_SECONDS)  # its identity Secret may come
        return None

    async def _secret(self, cluster: str, namespace: str, name: str) -> Obj | None:
        try:
            return await self.registry.get(self._secrets, cluster, namespace, name)
        except st.APIError as exc:
            if exc.code == 404:
                return None
            raise

    async def _reconcile_binding(self, key: ObjectKey) -> Result | None:
        binding = self._get(API_BINDING, key.cluster, key.name)
        if binding is None:
            return None
        finalizers = binding["metadata"].setdefault("finalizers", [])
        if binding["metadata"].get("deletionTimestamp"):
            return await self._delete(key, binding) if FINALIZER in finalizers else None
        if FINALIZER not in finalizers:  # metadata first; the update brings the binding back here
            finalizers.append(FINALIZER)
            await self.registry.update(API_BINDING, key.cluster, "", key.name, binding, ctx=system_context(key.cluster))
            return None
        outcome = decide(key.cluster, binding, self, self.builtins)
        if isinstance(outcome, Bind):
            claims = self.claims.setdefault(key.cluster, {})
            for bound in outcome.bound_resources:
                claims[(bound["group"], bound["resource"])] = key.name
            export = ObjectKey(outcome.provider, "", export_reference(binding, key.cluster)[1])
            self._hold(key, export, "; ".join(outcome.held) or None)
        status = wanted_status(binding.get("status"), outcome)
        if status != binding.get("status"):
            binding["status"] = status
            await self.registry.update(API_BINDING, key.cluster, "", key.name, binding, subresource="status",
                                       ctx=system_context(key.cluster))
            ready = next(c for c in status["conditions"] if c["type"] == "Ready")
            log.info("apibinding", cluster=key.cluster, name=key.name, phase=status["phase"], reason=ready["reason"])
        if isinstance(outcome, Bind):
            return None
        self.waiting.setdefault(outcome.waits_for, set()).add(key)
        return Result(requeue_after=RETRY_SECONDS)

    async def _delete(self, key: ObjectKey, binding: Obj) -> Result | None:
        served = self.bound.served.get((key.cluster, key.name), [])
        if not served and (binding.get("status") or {}).get("boundResources"):
            log.warning("deleting an apibinding whose schemas are gone; its objects stay in storage",
                        cluster=key.cluster, name=key.name)
        if await delete_bound_objects(self.storage, self.registry, key.cluster, served):
            return Result(requeue_after=CLEANUP_SECONDS)
        self._release(key)
        await drop_finalizer(self.registry, key.cluster, binding)
        return None
