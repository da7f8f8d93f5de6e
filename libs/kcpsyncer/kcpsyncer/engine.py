"""The syncer's wiring: one work queue of upstream object keys, fed by informers on both sides.

Per synced type there are two informers: kcp's objects labelled for this
SyncTarget in the logical cluster, and the physical cluster's objects carrying
this syncer's owner label. Any event on either side queues the upstream key;
`reconcile(key)` then looks at both caches and does what is missing: apply
the spec down (`down.py`), patch the status up (`up.py`), or delete down
(`remove.py`, only on positive evidence). Downstream namespaces are made and
cleaned up by `namespaces.py`; the SyncTarget's heartbeat is `heartbeat.py`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog
from prometheus_client import CollectorRegistry

from kcpcommon.backoff import Backoff
from kcpcommon.controller import Controller, Result
from kcpcommon.errors import APIClientError, APIConflictError
from kcpcommon.informer import DeletedFinalStateUnknown, deleted_object
from kcpcommon.informer_factory import SharedInformerFactory
from kcpcommon.keys import ObjectKey
from kcpcommon.tasks import cancel_and_wait, spawn

from .discovery import APIType, resolve
from .down import SpecDown
from .heartbeat import heartbeat_loop
from .metrics import SyncerMetrics
from .names import (
    ASSIGNMENT_LABEL,
    OWNER_LABEL,
    STATE_SYNC,
    UPSTREAM_CLUSTER_ANNOTATION,
    UPSTREAM_NAME_ANNOTATION,
    UPSTREAM_NAMESPACE_ANNOTATION,
    assigned_to,
    downstream_namespace,
    owner,
    state_label,
)
from .namespaces import DownstreamNamespaces
from .objects import Obj, deleting, meta
from .remove import Removal, absent_upstream
from .synced import SyncedType, SyncKey
from .transform import keep_scale_owners
from .up import StatusUp

if TYPE_CHECKING:
    from . import SyncerOptions

log = structlog.get_logger("kcpsyncer")

CONFLICT_RETRY = 0.5  # seconds: a safety net, the conflicting change's event normally requeues first


class Syncer:
    """One syncer's informers, queue and workers (see the module docstring)."""

    def __init__(self, options: SyncerOptions, *, registry: CollectorRegistry | None = None) -> None:
        self.options = options
        self.lc = options.logical_cluster
        self.target = options.sync_target
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
        self._log = log.bind(logical_cluster=self.lc, sync_target=self.target)
        self.namespaces = DownstreamNamespaces(self.down, logical_cluster=self.lc, owner=self.owner, log=self._log)
        self.spec_down = SpecDown(up=self.up, namespaces=self.namespaces, logical_cluster=self.lc,
                                  sync_target=self.target, metrics=self.metrics, log=self._log)
        self.status_up = StatusUp(sync_target=self.target, metrics=self.metrics)
        self.removal = Removal(spec_down=self.spec_down, status_up=self.status_up, metrics=self.metrics,
                               log=self._log)

    # --- running ---

    async def run(self, *, ready: asyncio.Event | None = None) -> None:
        """Discover the types, run informers, workers and the heartbeat until cancelled."""
        self._log.info("syncer starting", resources=list(self.options.resources))
        heartbeat = heartbeat_loop(up=self.up, down=self.down, sync_target=self.target,
                                   interval=self.options.heartbeat_interval, synced_resources=self._synced_resources,
                                   metrics=self.metrics, log=self._log)
        tasks = [spawn(self.controller.start(), name=f"{self.controller.name}:controller"),
                 spawn(heartbeat, name=f"{self.controller.name}:heartbeat")]
        try:
            await self._discover_loop(ready)
            await asyncio.Event().wait()  # the tasks run until we are cancelled
        finally:
            await cancel_and_wait(*tasks, *(t.release for t in self.types.values() if t.release is not None))
            await self.informers.stop()
            self._log.info("syncer stopped")

    def _synced_resources(self) -> list[str]:
        """The types whose caches have all listed: what the heartbeat reports as synced."""
        return sorted(t.name for t in self.types.values() if t.synced)

    async def _discover_loop(self, ready: asyncio.Event | None) -> None:
        """Resolve every type on both sides, again every `discovery_retry` s while some are not served;
        a failed discovery is retried with backoff (0.8 s doubling to 30 s), not on that period."""
        answered = False
        failures = Backoff()
        while True:
            delay = self.options.discovery_retry
            try:
                await self._discover()
                answered = True
                failures.reset()
            except APIClientError as exc:
                delay = failures.next()
                self.metrics.error(exc.reason or "DiscoveryFailed")
                self._log.warning("discovery failed; retrying", error=str(exc), retry_in=round(delay, 2))
            if answered and ready is not None and not ready.is_set():
                await self.informers.wait_for_sync()
                ready.set()
                self._log.info("syncer ready", synced=sorted(self.types), not_served=sorted(self._unserved))
            if answered and not self._unserved:
                return
            await asyncio.sleep(delay)

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
        upstream_meta = meta(obj)
        key = SyncKey(resource, str(upstream_meta.get("namespace") or ""), str(upstream_meta.get("name") or ""))
        self.spec_down.upstream_changed(key)
        self.controller.enqueue(key)

    def _upstream_key(self, resource: str, obj: Obj) -> SyncKey | None:
        annotations = meta(obj).get("annotations") or {}
        if annotations.get(UPSTREAM_CLUSTER_ANNOTATION) != self.lc or not annotations.get(UPSTREAM_NAME_ANNOTATION):
            return None
        return SyncKey(resource, str(annotations.get(UPSTREAM_NAMESPACE_ANNOTATION) or ""),
                       str(annotations[UPSTREAM_NAME_ANNOTATION]))

    def _downstream_changed(self, resource: str, old: Obj | None, new: Obj) -> None:
        key = self._upstream_key(resource, new)
        if key is None:
            return
        self.spec_down.downstream_changed(key)
        self.status_up.downstream_changed(key, old, new)
        self.controller.enqueue(key)

    def _downstream_deleted(self, resource: str, obj: Obj | DeletedFinalStateUnknown) -> None:
        final = deleted_object(obj)
        key = self._upstream_key(resource, final)
        if key is not None:
            self.spec_down.downstream_changed(key)
            self.controller.enqueue(key)
        namespace = meta(final).get("namespace")
        if namespace:  # its namespace may be empty now
            self.controller.enqueue(SyncKey("", "", str(namespace)))

    # --- reconcile ---

    def _downstream_namespace(self, typ: SyncedType, namespace: str) -> str | None:
        return downstream_namespace(self.lc, namespace) if typ.down.namespaced and namespace else None

    async def _reconcile(self, key: SyncKey) -> Result | None:
        if not key.resource:
            await self.namespaces.cleanup(key.name, self.types.values())
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
            up = await absent_upstream(typ, key)
        try:
            if up is None or deleting(up) or not assigned_to(meta(up).get("labels"), self.target):
                return await self.removal.remove(typ, key, up, down, down_ns)
            applied_hash = await self.spec_down.sync(typ, key, up, down, down_ns)
            await self.status_up.sync(typ, key, up, down, applied_hash)
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
