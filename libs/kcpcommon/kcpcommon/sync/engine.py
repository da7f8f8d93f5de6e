"""The syncer's reconcile loop: one work queue of upstream object keys, fed by informers on both sides.

Per synced type there are two informers: kcp's objects labelled for this
SyncTarget in the logical cluster, and the physical cluster's objects carrying
this syncer's owner label. Any event on either side queues the upstream key;
`reconcile(key)` then looks at both caches and does what is missing: apply
the spec down (one server-side apply), patch the status up, or delete down.

Deletes only ever follow positive evidence (see `_absent_upstream`): an object
missing from the upstream cache, whatever the reason (a DELETED event, a
relist tombstone, a downstream object with no upstream counterpart in cache),
is looked up with a GET on kcp, and only a 404 naming that very object, or the
object itself showing it is unassigned or being deleted, lets the syncer
delete downstream. kcp unreachable, a list that failed or came back empty
wrongly, a type not served: all of these raise, and the key is retried with
backoff, deleting nothing. The upstream finalizer keeps an object deleted
while the syncer was down until the syncer has removed its downstream copy.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import CollectorRegistry

from ..controller import Controller, Result, TerminalError
from ..dynamic import DynamicResource
from ..errors import APIClientError, APIConflictError, APINotFoundError
from ..informer import DeletedFinalStateUnknown, SharedInformer, deleted_object
from ..informer_factory import SharedInformerFactory
from ..keys import ObjectKey
from ..store import NAMESPACE_INDEX
from ..tasks import cancel_and_wait, spawn
from .discovery import APIType, resolve
from .metrics import DELETE, DOWN, UP, SyncerMetrics
from .names import (
    ASSIGNMENT_LABEL,
    FIELD_MANAGER,
    HEARTBEAT_GROUP_VERSION,
    NAMESPACE_LOCATOR_ANNOTATION,
    OWNER_LABEL,
    SPEC_HASH_ANNOTATION,
    STATE_SYNC,
    UPSTREAM_CLUSTER_ANNOTATION,
    UPSTREAM_NAME_ANNOTATION,
    UPSTREAM_NAMESPACE_ANNOTATION,
    assigned_to,
    downstream_namespace,
    namespace_locator,
    owner,
    state_label,
    syncer_finalizer,
)
from .transform import downstream_object, keep_scale_owners, scaled_downstream, status_patch, up_to_date

if TYPE_CHECKING:
    from . import SyncerOptions

Obj = Mapping[str, Any]

log = structlog.get_logger("kcpcommon.sync")

EVENT_ERRORS = (400, 403, 404, 422)  # downstream refusals a user can act on: reported as Events upstream
REFUSED = (400, 422)  # the object itself is refused downstream: retrying the same spec cannot help
DELETE_WAIT = 2.0  # seconds before looking again at a downstream object still being finalized
CONFLICT_RETRY = 0.5  # seconds: a safety net, the conflicting change's event normally requeues first


@dataclass(frozen=True, order=True, slots=True)
class SyncKey:
    """An upstream object of one synced type; `resource` "" is a downstream namespace to clean up (`name`)."""

    resource: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.resource}:{self.namespace}/{self.name}" if self.resource else f"namespace:{self.name}"


@dataclass
class SyncedType:
    """One resource type served on both sides, with its two informers."""

    name: str
    up: APIType
    down: APIType
    up_resource: DynamicResource
    down_resource: DynamicResource
    up_informer: SharedInformer
    down_informer: SharedInformer
    state_informer: SharedInformer | None = None  # upstream objects assigned by `state.workload.kcp.io/<target>`
    status_up: bool = field(init=False)
    waiting: set[SyncKey] = field(init=False, default_factory=set)  # keys held until the caches have listed
    release: asyncio.Task[None] | None = field(init=False, default=None)  # queues `waiting` once they have

    def __post_init__(self) -> None:
        self.status_up = self.up.has_status and self.down.has_status

    @property
    def informers(self) -> list[SharedInformer]:
        return [self.up_informer, self.down_informer, *([self.state_informer] if self.state_informer else [])]

    @property
    def synced(self) -> bool:
        return all(informer.has_synced for informer in self.informers)

    def upstream(self, key: ObjectKey) -> Obj | None:
        """The cached upstream object, assigned by either label."""
        found = self.up_informer.indexer.get(key)
        if found is None and self.state_informer is not None:
            found = self.state_informer.indexer.get(key)
        return found

    def upstream_in(self, namespace: str) -> list[Obj]:
        """The cached upstream objects of `namespace`, assigned by either label."""
        informers = [self.up_informer, *([self.state_informer] if self.state_informer is not None else [])]
        return [obj for informer in informers for obj in informer.indexer.by_index(NAMESPACE_INDEX, namespace)]


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _finalizers(obj: Obj) -> list[str]:
    return [str(f) for f in _meta(obj).get("finalizers") or []]


def _deleting(obj: Obj) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


def _namespace_trouble(exc: APIClientError) -> bool:
    """The mapped namespace is missing or terminating: the syncer's own business (it recreates it), not the user's."""
    return (exc.status == 404 and exc.details.get("kind") == "namespaces") or "being terminated" in exc.message


def _hash_of(body: Obj) -> str:
    return str(((_meta(body).get("annotations") or {}).get(SPEC_HASH_ANNOTATION)) or "")


def rfc3339_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Syncer:
    """One syncer's informers, queue and workers (see the module docstring)."""

    def __init__(self, options: SyncerOptions, *, registry: CollectorRegistry | None = None) -> None:
        self.options = options
        self.lc = options.logical_cluster
        self.target = options.sync_target
        self.finalizer = syncer_finalizer(options.sync_target)
        self.owner = owner(options.logical_cluster, options.sync_target)
        self.selector = f"{ASSIGNMENT_LABEL}={options.sync_target}"
        self.state_selector = f"{state_label(options.sync_target)}={STATE_SYNC}"
        self.metrics = SyncerMetrics(registry, logical_cluster=self.lc, sync_target=self.target)
        self.up = options.upstream.dynamic(self.lc)
        self.down = options.downstream.dynamic()
        self.controller: Controller[SyncKey] = Controller(
            f"syncer:{self.lc}:{self.target}", self._reconcile, workers=options.workers, registry=registry,
            component="kcp_syncer")
        # the syncer reads no managedFields but those of scale writes: its caches (three per type) keep only those
        self.informers = SharedInformerFactory(options.upstream, transform=keep_scale_owners)
        self.types: dict[str, SyncedType] = {}
        self._unserved: set[str] = set(options.resources)  # not (yet) served on both sides
        self._namespaces: set[str] = set()  # downstream namespaces known to exist
        self._namespace_locks: dict[str, asyncio.Lock] = {}
        self._namespace_origin: dict[str, str] = {}  # downstream namespace -> upstream namespace
        self._changed: dict[SyncKey, float] = {}  # first unsynced upstream change, for the latency histogram
        self._status_seen: dict[SyncKey, float] = {}  # first unsynced downstream status change
        self._reported: dict[SyncKey, str] = {}  # last error reported as an Event, not repeated
        self._finalized: dict[SyncKey, str] = {}  # uid of the object we added our finalizer to
        # spec hash we applied, until the downstream informer next reports on the object: meanwhile the
        # downstream cache is known to be behind our own write, and must not trigger a second apply
        self._applied: dict[SyncKey, str] = {}
        self._log = log.bind(logical_cluster=self.lc, sync_target=self.target)

    # --- running ---

    async def run(self, *, ready: asyncio.Event | None = None) -> None:
        """Discover the types, run informers, workers and the heartbeat until cancelled."""
        self._log.info("syncer starting", resources=list(self.options.resources))
        tasks = [spawn(self.controller.start(), name=f"{self.controller.name}:controller"),
                 spawn(self._heartbeat_loop(), name=f"{self.controller.name}:heartbeat")]
        try:
            await self._discover_loop(ready)
            await asyncio.Event().wait()  # the tasks run until we are cancelled
        finally:
            await cancel_and_wait(*tasks, *(t.release for t in self.types.values() if t.release is not None))
            await self.informers.stop()
            self._log.info("syncer stopped")

    async def _discover_loop(self, ready: asyncio.Event | None) -> None:
        """Resolve every type on both sides, again every `discovery_retry` s while some are not served."""
        answered = False
        while True:
            try:
                await self._discover()
                answered = True
            except APIClientError as exc:
                self.metrics.error(exc.reason or "DiscoveryFailed")
                self._log.warning("discovery failed; retrying", error=str(exc))
            if answered and ready is not None and not ready.is_set():
                await self.informers.wait_for_sync()
                ready.set()
                self._log.info("syncer ready", synced=sorted(self.types), not_served=sorted(self._unserved))
            if answered and not self._unserved:
                return
            await asyncio.sleep(self.options.discovery_retry)

    async def _discover(self) -> None:
        for name in sorted(self._unserved):
            up, down = await asyncio.gather(resolve(self.up, name), resolve(self.down, name))
            if up is None or down is None:
                self._log.info("type not served; not synced yet", resource=name, upstream=up is not None,
                               downstream=down is not None)
                continue
            self._add_type(name, up, down)
            self._unserved.discard(name)
        self.metrics.types(len(self.types))
        self.informers.start()

    def _add_type(self, name: str, up: APIType, down: APIType) -> None:
        up_informer = self.informers.informer(cluster=self.lc, api_version=up.api_version, plural=up.plural,
                                              namespaced=up.namespaced, label_selector=self.selector)
        down_informer = self.informers.informer(cluster=self.target, api_version=down.api_version,
                                                plural=down.plural, namespaced=down.namespaced,
                                                label_selector=f"{OWNER_LABEL}={self.owner}",
                                                clients=self.options.downstream)
        state_informer = self.informers.informer(cluster=self.lc, api_version=up.api_version, plural=up.plural,
                                                 namespaced=up.namespaced, label_selector=self.state_selector)
        typ = SyncedType(name, up, down, up.resource(self.up), down.resource(self.down), up_informer, down_informer,
                         state_informer)
        self.types[name] = typ
        for informer in (up_informer, state_informer):
            informer.add_handler(on_add=lambda obj: self._upstream_changed(name, obj),
                                 on_update=lambda old, new: self._upstream_changed(name, new),
                                 on_delete=lambda obj: self._upstream_changed(name, deleted_object(obj)),
                                 name=f"syncer:{self.target}")
        down_informer.add_handler(on_add=lambda obj: self._downstream_changed(name, None, obj),
                                  on_update=lambda old, new: self._downstream_changed(name, old, new),
                                  on_delete=lambda obj: self._downstream_deleted(name, obj),
                                  name=f"syncer:{self.target}")
        self._log.info("syncing type", resource=name, upstream=up.api_version, downstream=down.api_version)

    # --- event handlers: queue the upstream key ---

    def _upstream_changed(self, resource: str, obj: Obj) -> None:
        meta = _meta(obj)
        key = SyncKey(resource, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        self._changed.setdefault(key, time.monotonic())
        self.controller.enqueue(key)

    def _upstream_key(self, resource: str, obj: Obj) -> SyncKey | None:
        annotations = _meta(obj).get("annotations") or {}
        if annotations.get(UPSTREAM_CLUSTER_ANNOTATION) != self.lc or not annotations.get(UPSTREAM_NAME_ANNOTATION):
            return None
        return SyncKey(resource, str(annotations.get(UPSTREAM_NAMESPACE_ANNOTATION) or ""),
                       str(annotations[UPSTREAM_NAME_ANNOTATION]))

    def _downstream_changed(self, resource: str, old: Obj | None, new: Obj) -> None:
        key = self._upstream_key(resource, new)
        if key is None:
            return
        self._applied.pop(key, None)
        if new.get("status") is not None and (old is None or old.get("status") != new.get("status")):
            self._status_seen.setdefault(key, time.monotonic())
        self.controller.enqueue(key)

    def _downstream_deleted(self, resource: str, obj: Obj | DeletedFinalStateUnknown) -> None:
        final = deleted_object(obj)
        key = self._upstream_key(resource, final)
        if key is not None:
            self._applied.pop(key, None)
            self.controller.enqueue(key)
        namespace = _meta(final).get("namespace")
        if namespace:  # its namespace may be empty now
            self.controller.enqueue(SyncKey("", "", str(namespace)))

    # --- reconcile ---

    def _downstream_namespace(self, typ: SyncedType, namespace: str) -> str | None:
        return downstream_namespace(self.lc, namespace) if typ.down.namespaced and namespace else None

    async def _reconcile(self, key: SyncKey) -> Result | None:
        if not key.resource:
            await self._cleanup_namespace(key.name)
            return None
        typ = self.types.get(key.resource)
        if typ is None:
            return None
        if not typ.synced:  # absence in a cache that has not listed yet proves nothing
            self._hold_until_synced(typ, key)
            return None
        down_ns = self._downstream_namespace(typ, key.namespace)
        up = typ.upstream(ObjectKey(self.lc, key.namespace, key.name))
        down = typ.down_informer.indexer.get(ObjectKey(self.target, down_ns or "", key.name))
        if up is None:
            up = await self._absent_upstream(typ, key)
        try:
            if up is None or _deleting(up) or not assigned_to(_meta(up).get("labels"), self.target):
                return await self._remove(typ, key, up, down, down_ns)
            applied_hash = await self._sync_down(typ, key, up, down, down_ns)
            await self._sync_up(typ, key, up, down, applied_hash)
        except APIConflictError:
            # our cached upstream copy is stale (the change's own event requeues the key): not a failure
            self.metrics.error("Conflict")
            return Result(requeue_after=CONFLICT_RETRY)
        return None

    def _hold_until_synced(self, typ: SyncedType, key: SyncKey) -> None:
        """Queue `key` again the moment its type's caches have all listed (not after a fixed delay)."""
        typ.waiting.add(key)
        if typ.release is None:
            typ.release = spawn(self._release_when_synced(typ), name=f"{self.controller.name}:{typ.name}:synced")

    async def _release_when_synced(self, typ: SyncedType) -> None:
        await asyncio.gather(*(informer.wait_for_sync() for informer in typ.informers))
        keys, typ.waiting, typ.release = typ.waiting, set(), None
        for key in sorted(keys):
            self.controller.enqueue(key)

    async def _absent_upstream(self, typ: SyncedType, key: SyncKey) -> Obj | None:
        """The upstream object, read from kcp because the cache lacks it; None only on a 404 naming it.

        Any other answer (kcp unreachable, 403, the type gone: a 404 without the object's name) raises,
        so the key is retried with backoff and nothing is deleted.
        """
        try:
            obj: Obj = await typ.up_resource.get(key.name, namespace=key.namespace or None)
        except APINotFoundError as exc:
            if exc.details.get("name") == key.name:
                return None
            raise
        return obj

    async def _remove(self, typ: SyncedType, key: SyncKey, up: Obj | None, down: Obj | None,
                      down_ns: str | None) -> Result | None:
        """Unassigned, deleted or being deleted upstream: delete downstream, then release the finalizer."""
        self._changed.pop(key, None)
        self._status_seen.pop(key, None)
        if down is not None:
            if not await self._delete_downstream(typ, key, down, down_ns):
                return Result(requeue_after=DELETE_WAIT)
        self._finalized.pop(key, None)
        self._applied.pop(key, None)
        if up is not None and self.finalizer in _finalizers(up):
            await self._set_finalizers(typ, up, [f for f in _finalizers(up) if f != self.finalizer])
        self._reported.pop(key, None)
        return None

    async def _delete_downstream(self, typ: SyncedType, key: SyncKey, down: Obj, down_ns: str | None) -> bool:
        """Delete our downstream copy (that very object: uid precondition); True once it is gone."""
        if _deleting(down):
            return False
        uid = str(_meta(down).get("uid") or "")
        try:
            result = await typ.down_resource.delete(key.name, namespace=down_ns, propagation_policy="Background",
                                                    preconditions={"uid": uid} if uid else None)
        except APINotFoundError:
            return True
        except APIConflictError:  # another object by that name now: its own events bring it here again
            return True
        self.metrics.synced(DELETE, typ.name)
        self._log.info("deleted downstream", resource=typ.name, namespace=key.namespace, name=key.name,
                       downstream_namespace=down_ns)
        return result.get("kind") == "Status" or not _finalizers(result)

    async def _set_finalizers(self, typ: SyncedType, up: Obj, finalizers: list[str]) -> None:
        """Merge-patch the finalizer list, conditional on the resourceVersion we read (409: retried)."""
        meta = _meta(up)
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta.get("resourceVersion")}}
        try:
            await typ.up_resource.patch(str(meta.get("name")), patch, namespace=meta.get("namespace") or None)
        except APINotFoundError:
            pass  # already gone: nothing to hold or release

    async def _sync_down(self, typ: SyncedType, key: SyncKey, up: Obj, down: Obj | None,
                         down_ns: str | None) -> str:
        """Finalizer up and one apply down, as needed; returns the spec hash the object should carry."""
        desired = downstream_object(up, api_version=typ.down.api_version, kind=typ.down.kind, namespace=down_ns,
                                    logical_cluster=self.lc, sync_target=self.target,
                                    scaled_downstream=scaled_downstream(down))
        writes = []
        uid = str(_meta(up).get("uid") or "")
        if self.finalizer not in _finalizers(up) and self._finalized.get(key) != uid:
            writes.append(self._add_finalizer(typ, key, up, uid))
        applied = self._applied.get(key)
        stale = not up_to_date(desired, down) and (applied is None or applied != _hash_of(desired))
        if stale:
            writes.append(self._apply(typ, key, up, desired, down_ns))
        if writes:
            await asyncio.gather(*writes)
        changed = self._changed.pop(key, None)
        if stale and changed is not None:
            self.metrics.latency(DOWN, time.monotonic() - changed)
        return _hash_of(desired)

    async def _add_finalizer(self, typ: SyncedType, key: SyncKey, up: Obj, uid: str) -> None:
        """Hold the upstream object until its downstream copy is deleted; remembered, so a cache that
        has not seen our own patch yet does not make us patch again (and conflict)."""
        await self._set_finalizers(typ, up, [*_finalizers(up), self.finalizer])
        self._finalized[key] = uid

    async def _apply(self, typ: SyncedType, key: SyncKey, up: Obj, desired: dict[str, Any],
                     down_ns: str | None) -> None:
        if down_ns:
            await self._ensure_namespace(down_ns, key.namespace)
        try:
            await typ.down_resource.patch(key.name, desired, namespace=down_ns, patch_type="apply",
                                          field_manager=FIELD_MANAGER, force=True)
        except APIClientError as exc:
            self.metrics.error(exc.reason or f"HTTP{exc.status}")
            if down_ns and exc.status in (403, 404):  # the namespace may be gone or terminating: recreate it
                self._namespaces.discard(down_ns)
            if exc.status in EVENT_ERRORS and not _namespace_trouble(exc):
                await self._report(typ, key, up, exc)
            if exc.status in REFUSED:  # only a change of the upstream object (which requeues it) can help
                raise TerminalError(f"the physical cluster refuses the object: {exc}") from exc
            raise
        self.metrics.synced(DOWN, typ.name)
        self._applied[key] = _hash_of(desired)
        self._reported.pop(key, None)

    async def _sync_up(self, typ: SyncedType, key: SyncKey, up: Obj, down: Obj | None, applied_hash: str) -> None:
        """The downstream status, as a merge patch of the status subresource, without a precondition.

        The syncer is the only writer of a synced object's status, and the patch is recomputed
        against the cache on every upstream change: a patch made from a stale copy is corrected by
        the reconcile its own event triggers. A precondition would only turn the cache's lag
        behind our own finalizer patch into conflicts and retries.
        """
        seen = self._status_seen.pop(key, None)
        if down is None or not typ.status_up:
            return
        patch = status_patch(up, down, applied_hash)
        if patch is None:
            return
        try:
            await typ.up_resource.patch(key.name, patch, namespace=key.namespace or None, subresource="status")
        except APIClientError as exc:
            if not isinstance(exc, APIConflictError):
                self.metrics.error(exc.reason or f"HTTP{exc.status}")
            if seen is not None:
                self._status_seen.setdefault(key, seen)
            raise
        self.metrics.synced(UP, typ.name)
        if seen is not None:
            self.metrics.latency(UP, time.monotonic() - seen)

    async def _report(self, typ: SyncedType, key: SyncKey, up: Obj, exc: APIClientError) -> None:
        """An Event on the upstream object saying why it cannot be synced (once per distinct message)."""
        if self._reported.get(key) == exc.message:
            return
        self._reported[key] = exc.message
        meta = _meta(up)
        now = rfc3339_now()
        event = {
            "apiVersion": "v1", "kind": "Event",
            # named as client-go's recorder names events: the object's name and a unique suffix
            "metadata": {"name": f"{key.name}.{time.time_ns():x}", "namespace": key.namespace or "default"},
            "involvedObject": {"apiVersion": up.get("apiVersion"), "kind": up.get("kind"), "name": key.name,
                               "namespace": key.namespace or None, "uid": meta.get("uid"),
                               "resourceVersion": meta.get("resourceVersion")},
            "reason": "SyncFailed", "type": "Warning", "count": 1, "firstTimestamp": now, "lastTimestamp": now,
            "message": f"cannot sync to SyncTarget {self.target}: {exc.message}"[:1024],
            "source": {"component": FIELD_MANAGER}, "reportingComponent": FIELD_MANAGER,
        }
        try:
            await self.up.resource("v1", "events", namespaced=True).create(event)
        except APIClientError as error:
            self._log.warning("could not record a sync failure event", error=str(error))

    # --- downstream namespaces ---

    async def _ensure_namespace(self, down_ns: str, up_ns: str) -> None:
        if down_ns in self._namespaces:
            return
        lock = self._namespace_locks.setdefault(down_ns, asyncio.Lock())
        async with lock:
            if down_ns in self._namespaces:
                return
            body = {"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": down_ns, "labels": {OWNER_LABEL: self.owner},
                                 "annotations": {NAMESPACE_LOCATOR_ANNOTATION: namespace_locator(self.lc, up_ns)}}}
            await self.down.resource("v1", "namespaces", namespaced=False).patch(
                down_ns, body, patch_type="apply", field_manager=FIELD_MANAGER, force=True)
            self._namespaces.add(down_ns)
            self._namespace_origin[down_ns] = up_ns

    async def _cleanup_namespace(self, down_ns: str) -> None:
        """Delete a downstream namespace of ours once nothing synced is left in it, on either side."""
        namespaces = self.down.resource("v1", "namespaces", namespaced=False)
        up_ns = self._namespace_origin.get(down_ns)
        if up_ns is None:
            try:
                found = await namespaces.get(down_ns)
            except APINotFoundError:
                return
            if (_meta(found).get("labels") or {}).get(OWNER_LABEL) != self.owner:
                return
            up_ns = downstream_origin(found)
            if up_ns is None:
                return
        for typ in self.types.values():
            if not typ.synced:
                return
            if any(not _deleting(obj) for obj in typ.upstream_in(up_ns)):
                return
            if typ.down_informer.indexer.by_index(NAMESPACE_INDEX, down_ns):
                return
        self._namespaces.discard(down_ns)
        try:
            await namespaces.delete(down_ns)
        except APINotFoundError:
            return
        self._log.info("deleted empty downstream namespace", namespace=up_ns, downstream_namespace=down_ns)

    # --- heartbeat ---

    async def _heartbeat_loop(self) -> None:
        """The SyncTarget's heartbeat, written only while the physical cluster answers.

        The heartbeat is what the cluster controller turns into Ready: a syncer that keeps beating
        while its physical cluster is down would keep a dead cluster Ready (and scheduled on).
        """
        synctargets = self.up.resource(HEARTBEAT_GROUP_VERSION, "synctargets", namespaced=False)
        while True:
            try:
                await self.down.request("GET", "/version")
            except APIClientError as exc:
                self.metrics.error("PhysicalClusterUnreachable")
                self._log.warning("heartbeat skipped: the physical cluster does not answer", error=str(exc))
            else:
                try:
                    await synctargets.patch(self.target, {"status": {
                        "lastSyncerHeartbeatTime": rfc3339_now(),
                        "syncedResources": sorted(t.name for t in self.types.values() if t.synced)}},
                        subresource="status")
                    self.metrics.heartbeat(time.time())
                except APIClientError as exc:
                    self.metrics.error(exc.reason or "HeartbeatFailed")
                    self._log.warning("heartbeat failed", error=str(exc))
            await asyncio.sleep(self.options.heartbeat_interval)


def downstream_origin(namespace: Obj) -> str | None:
    """The upstream namespace a downstream namespace's locator annotation names."""
    text = (_meta(namespace).get("annotations") or {}).get(NAMESPACE_LOCATOR_ANNOTATION)
    try:
        locator = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    value = locator.get("namespace") if isinstance(locator, dict) else None
    return value if isinstance(value, str) else None
