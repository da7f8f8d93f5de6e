"""The SyncTarget controller: one reconcile per SyncTarget, in any logical cluster.

Each pass: parse the kubeconfig (a bad one is reported once, not retried), reach the cluster (its
Nodes give capacity; an error is reported and retried with backoff), import the synced types
(polled, as there is no watch for discovery), make sure the syncer runs (push) or is installed
(pull), then derive Ready from the syncer's heartbeat. The pass is repeated every heartbeat
interval, and when the heartbeat would turn stale, so Ready follows a silent syncer in time.
A finalizer lets a deleted SyncTarget's syncer be stopped and its imports removed first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from kcpcommon.clients import ClientFactory, KubeClientFactory
from kcpcommon.clock import Clock, RealClock
from kcpcommon.controller import Result
from kcpcommon.errors import APIClientError, APIConflictError, APINotFoundError, InvalidKubeconfigError
from kcpcommon.keys import ObjectKey
from kcpcommon.kubetime import parse_time
from kcpcommon.store import Indexer

from . import VERSION
from . import conditions as cond
from .exports import Merged
from .imports import Importer, Verdict
from .negotiation import describe
from .physical import ImportedType, SchemaCache, node_resources, read_type
from .teardown import release_upstream, remove_downstream
from .workloadexport import offer_imported_types

log = structlog.get_logger("kcp-cluster-controller")

API_VERSION = "workload.kcp.io/v1alpha1"
PLURAL = "synctargets"
FINALIZER = "workload.kcp.io/cluster-controller"
MESSAGE_FIELDS = 3  # fields an IncompatibleSchema message names; status.incompatibleFields has them all
KEEP_DOWNSTREAM = "workload.kcp.io/keep-downstream"  # "true": deleting the SyncTarget leaves what we installed
DEFAULT_RESOURCES = ("deployments.apps", "replicasets.apps", "statefulsets.apps", "daemonsets.apps",
                     # kcp keeps the history of its StatefulSets (and DaemonSets) as ControllerRevisions
                     "controllerrevisions.apps", "services", "configmaps", "pods",
                     "secrets", "serviceaccounts", "persistentvolumeclaims", "jobs.batch", "ingresses.networking.k8s.io",
                     # the cluster-scoped classes applications ship with the workloads that name them
                     "storageclasses.storage.k8s.io", "priorityclasses.scheduling.k8s.io",
                     "ingressclasses.networking.k8s.io", "runtimeclasses.node.k8s.io")


class Unreachable(Exception):
    """The physical cluster did not answer (or refused us): reported, then retried with backoff."""


class SyncerRunner(Protocol):
    """What a syncer mode does for a SyncTarget."""

    async def ensure(self, key: ObjectKey, st: dict[str, Any], downstream: KubeClientFactory,
                     resources: tuple[str, ...]) -> cond.Condition: ...

    async def remove(self, key: ObjectKey, st: dict[str, Any] | None, keep_downstream: bool) -> None: ...


@dataclass
class _Downstream:
    fingerprint: str
    factory: KubeClientFactory
    views_at: float = -1.0  # when the types were last read (clock time)
    schemas: SchemaCache = field(default_factory=SchemaCache)  # its OpenAPI schemas, converted once per version


class SyncTargetReconciler:
    def __init__(self, kcp: ClientFactory, cache: Indexer | Merged, syncers: SyncerRunner, *, heartbeat_interval: float,
                 heartbeat_threshold: float, discovery_interval: float, clock: Clock | None = None,
                 wall: Callable[[], datetime] = lambda: datetime.now(UTC),
                 enqueue: Callable[[ObjectKey], None] = lambda key: None) -> None:
        self.kcp = kcp
        self.cache = cache
        self.syncers = syncers
        self.heartbeat_interval = heartbeat_interval
        self.heartbeat_threshold = heartbeat_threshold
        self.discovery_interval = discovery_interval
        self.clock = clock or RealClock()
        self.wall = wall
        self.enqueue = enqueue
        self.importer = Importer(kcp.dynamic)
        self._downstream: dict[ObjectKey, _Downstream] = {}
        self._verdicts: dict[ObjectKey, dict[str, Verdict]] = {}
        self._import_errors: dict[ObjectKey, dict[str, str]] = {}
        # resources a target's last publish did not finish (a conflict, a lost connection): its retry
        # must publish them although its views no longer look changed
        self._unpublished: dict[ObjectKey, set[str]] = {}

    def _targets(self, cluster: str) -> Any:
        return self.kcp.dynamic(cluster).resource(API_VERSION, PLURAL, namespaced=False)

    async def reconcile(self, key: ObjectKey) -> Result | None:
        st = self.cache.get_copy(key)
        if st is None:
            await self._cleanup(key, None)
            return None
        meta = st["metadata"]
        if meta.get("deletionTimestamp"):
            if FINALIZER in (meta.get("finalizers") or []):
                await self._cleanup(key, st)
                await self._remove_finalizer(key, st)
            return None
        if FINALIZER not in (meta.get("finalizers") or []):
            await self._targets(key.cluster).patch(key.name, [
                {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]},
                {"op": "add", "path": "/metadata/finalizers", "value": [*(meta.get("finalizers") or []), FINALIZER]}],
                patch_type="json")
            return None  # the update comes back through the informer
        return await self._sync(key, st)

    async def _sync(self, key: ObjectKey, st: dict[str, Any]) -> Result | None:
        spec, status = st.get("spec") or {}, st.get("status") or {}
        now = self.wall()
        try:
            downstream = await self._factory(key, str(spec.get("kubeconfig") or ""))
        except InvalidKubeconfigError as exc:
            await self._syncer_remove(key, st)
            await self._write(key, st, cond.not_ready(cond.INVALID_KUBECONFIG, str(exc)), now)
            return None  # nothing to retry until the kubeconfig changes (an update requeues us)
        resources = tuple(spec.get("resources") or DEFAULT_RESOURCES)
        try:
            capacity, allocatable = await node_resources(downstream.factory.dynamic())
        except APIClientError as exc:
            await self._write(key, st, cond.not_ready(cond.UNREACHABLE, f"cannot reach the cluster: {exc}"), now)
            raise Unreachable(str(exc)) from exc
        imported = await self._import(key, downstream, resources)
        await offer_imported_types(self.kcp, key.cluster)
        syncer = await self.syncers.ensure(key, st, downstream.factory, resources)
        beat, fresh_for = cond.heartbeat(parse_time(status.get("lastSyncerHeartbeatTime")), now,
                                         self.heartbeat_threshold)
        details = [syncer, beat, imported]
        await self._write(key, st, [cond.ready(details), *details], now,
                          extra={"capacity": capacity, "allocatable": allocatable,
                                 "importedResources": sorted(self._verdicts.get(key, {})),
                                 "incompatibleFields": self.incompatible_fields(key)})
        wait = self.heartbeat_interval if fresh_for is None else min(self.heartbeat_interval, fresh_for + 0.5)
        return Result(requeue_after=wait)

    async def _factory(self, key: ObjectKey, kubeconfig: str) -> _Downstream:
        fingerprint = hashlib.sha256(kubeconfig.encode()).hexdigest()
        known = self._downstream.get(key)
        if known is not None and known.fingerprint == fingerprint:
            return known
        if known is not None:
            await known.factory.close()
            del self._downstream[key]
        factory = await KubeClientFactory.from_text(kubeconfig, name=key.name, component="kcp-cluster-controller",
                                                    version=VERSION, request_timeout=10.0)
        self._downstream[key] = _Downstream(fingerprint, factory)
        return self._downstream[key]

    async def _import(self, key: ObjectKey, downstream: _Downstream, resources: tuple[str, ...]) -> cond.Condition:
        """APIsImported: read the cluster's types when due, publish them, and say what did not fit."""
        changed = False
        if downstream.views_at < 0 or self.clock.now() - downstream.views_at >= self.discovery_interval \
                or not self.importer.has_views(key.cluster, key.name):
            views: dict[str, ImportedType] = {}
            errors: dict[str, str] = {}
            downstream.schemas.begin_round()
            for resource in resources:
                try:
                    view = await read_type(downstream.factory.dynamic(), resource, downstream.schemas)
                    if not await self.importer.kcp_serves_natively(key.cluster, resource, view):
                        views[resource] = view
                except APIClientError as exc:
                    errors[resource] = str(exc)
                except Exception as exc:  # a schema we cannot convert: report it, import the rest
                    log.warning("cannot import type", resource=resource, error=str(exc))
                    errors[resource] = f"{type(exc).__name__}: {exc}"
            previous = set(self.importer._views.get(key.cluster, {}).get(key.name, {}))
            changed = self.importer.set_views(key.cluster, key.name, views)
            self._import_errors[key] = errors
            downstream.views_at = self.clock.now()
            resources_to_publish = set(views) | previous
        else:
            resources_to_publish = set(self._verdicts.get(key, {}))
        pending = self._unpublished.get(key, set())
        if changed or key not in self._verdicts or pending:
            self._unpublished[key] = resources_to_publish | pending
            await self._publish(key.cluster, self._unpublished[key], exclude=key)
            del self._unpublished[key]
        return self._imports_condition(key, resources)

    async def _publish(self, cluster: str, resources: set[str], *, exclude: ObjectKey | None = None) -> None:
        """Publish each resource and record every target's verdict; requeue the others whose verdict moved."""
        for resource in sorted(resources):
            verdicts = await self.importer.publish(cluster, resource)
            for target in self.importer.targets(cluster):
                other = ObjectKey(cluster, "", target)
                mine = self._verdicts.setdefault(other, {})
                before = mine.get(resource)
                if target in verdicts:
                    mine[resource] = verdicts[target]
                else:
                    mine.pop(resource, None)
                if other != exclude and before != mine.get(resource):
                    self.enqueue(other)

    def incompatible_fields(self, key: ObjectKey) -> dict[str, list[str]]:
        """Per resource, the published fields this cluster lacks (status.incompatibleFields)."""
        return {r: list(v.missing) for r, v in sorted((self._verdicts.get(key) or {}).items()) if v.missing}

    def _imports_condition(self, key: ObjectKey, requested: tuple[str, ...] = ()) -> cond.Condition:
        errors = self._import_errors.get(key) or {}
        incompatible = {r: v for r, v in (self._verdicts.get(key) or {}).items() if v.missing}
        if incompatible:
            parts = []
            for resource, verdict in sorted(incompatible.items()):
                against = "the hand-made CRD" if verdict.hand_made else "the other clusters"
                parts.append(f"{resource}: this cluster lacks fields {against} have: "
                             f"{describe(list(verdict.missing), limit=MESSAGE_FIELDS)}")
            return cond.condition(cond.APIS_IMPORTED, cond.FALSE, "IncompatibleSchema",
                                  "; ".join(parts) + " (every field: status.incompatibleFields)")
        if errors:
            return cond.import_failures(errors, requested)
        return cond.condition(cond.APIS_IMPORTED, cond.TRUE, "Imported", "")

    async def _write(self, key: ObjectKey, st: dict[str, Any], conditions: list[cond.Condition], now: datetime,
                     extra: dict[str, Any] | None = None) -> None:
        status = st.get("status") or {}
        merged = cond.merge(status.get("conditions"), conditions, now)
        wanted = {"conditions": merged, "observedGeneration": st["metadata"].get("generation"), **(extra or {})}
        if all(status.get(k) == v for k, v in wanted.items()):
            return
        try:
            await self._targets(key.cluster).patch(key.name, {"status": wanted}, subresource="status")
        except APINotFoundError:
            return
        if any(c["type"] == cond.READY and (cond.find(status.get("conditions"), cond.READY) or {}).get("status")
               != c["status"] for c in conditions):
            log.info("sync target readiness changed", ready=next(c["status"] for c in merged if c["type"] == cond.READY),
                     reason=next(c["reason"] for c in merged if c["type"] == cond.READY))

    async def _syncer_remove(self, key: ObjectKey, st: dict[str, Any] | None) -> None:
        keep = ((st or {}).get("metadata", {}).get("annotations") or {}).get(KEEP_DOWNSTREAM) == "true"
        await self.syncers.remove(key, st, keep)

    async def _cleanup(self, key: ObjectKey, st: dict[str, Any] | None) -> None:
        """Stop (or uninstall) the syncer, withdraw the target's views, renegotiate or delete its imports;
        for a SyncTarget being deleted also lift the syncer's upstream finalizers and remove downstream
        what its syncer created (unless annotated to keep it)."""
        await self._syncer_remove(key, st)
        known = self._downstream.pop(key, None)
        if st is not None:
            synced = tuple((st.get("spec") or {}).get("resources") or DEFAULT_RESOURCES)
            released = await release_upstream(self.kcp.dynamic(key.cluster), synced, key.name)
            keep = (st["metadata"].get("annotations") or {}).get(KEEP_DOWNSTREAM) == "true"
            removed: list[str] = []
            if known is not None and not keep:
                try:
                    removed = await remove_downstream(known.factory.dynamic(), key.cluster, key.name, synced)
                except APIClientError as exc:
                    log.warning("cannot remove what the syncer made downstream", error=str(exc))
            log.info("sync target released", upstream_finalizers_lifted=released, downstream_removed=removed,
                     kept_downstream=keep)
        if known is not None:
            await known.factory.close()
        resources = self.importer.forget(key.cluster, key.name)
        self._verdicts.pop(key, None)
        self._import_errors.pop(key, None)
        self._unpublished.pop(key, None)
        if resources:
            await self._publish(key.cluster, resources)

    async def _remove_finalizer(self, key: ObjectKey, st: dict[str, Any]) -> None:
        finalizers = [f for f in st["metadata"].get("finalizers") or [] if f != FINALIZER]
        try:
            await self._targets(key.cluster).patch(key.name, [
                {"op": "test", "path": "/metadata/resourceVersion", "value": st["metadata"]["resourceVersion"]},
                {"op": "replace", "path": "/metadata/finalizers", "value": finalizers}], patch_type="json")
        except APINotFoundError:
            pass
        except APIConflictError:
            raise

    async def close(self) -> None:
        for known in self._downstream.values():
            await known.factory.close()
        self._downstream.clear()
