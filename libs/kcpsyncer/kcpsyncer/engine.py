"""The syncer's wiring: one work queue of upstream object keys, fed by informers on both sides.

Per synced type there are two informers: kcp's objects labelled for this
SyncTarget in the logical cluster, and the physical cluster's objects carrying
this syncer's owner label. Any event on either side queues the upstream key;
`reconcile(key)` then looks at both caches and does what is missing: apply
the spec down (`down.py`), patch the status up (`up.py`), or delete down
(`remove.py`, only on positive evidence). A type this syncer may not read
cluster-wide (in pull mode, every namespaced type: synced, mirrored and Events) is watched per namespace
of its own (`pernamespace.py`). Downstream namespaces are made and
cleaned up by `namespaces.py`; the SyncTarget's heartbeat is `heartbeat.py`; the tunnel that carries
kcp's requests for the mirrored pods' logs and streams is `tunnel.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import CollectorRegistry

from kcpcommon.backoff import Backoff
from kcpcommon.controller import Controller, Result
from kcpcommon.dynamic import DynamicResource
from kcpcommon.errors import APIClientError, APIConflictError, APINotFoundError
from kcpcommon.informer import DeletedFinalStateUnknown, SharedInformer, deleted_object
from kcpcommon.informer_factory import SharedInformerFactory
from kcpcommon.keys import ObjectKey, sync_target_key
from kcpcommon.store import NAMESPACE_INDEX
from kcpcommon.tasks import cancel_and_wait, spawn

from .autoscalers import AUTOSCALERS, Autoscalers
from .classes import ClassNames, MissingClass
from .discovery import APIType, resolve
from .down import SpecDown
from .heartbeat import heartbeat_loop
from .metrics import SyncerMetrics
from .names import (
    ASSIGNMENT_LABEL,
    OWNER_LABEL,
    STATE_SYNC,
    assigned_to,
    downstream_name,
    downstream_namespace,
    owner,
    state_label,
)
from .namespaces import DownstreamNamespaces, downstream_origin
from .objects import Obj, deleting, meta
from .pernamespace import PerNamespaceInformer, readable_cluster_wide
from .remove import Removal, absent_upstream, propagation_of
from .revisions import CONTROLLER_UID_INDEX, controller_uid, controller_uid_index, faces_of, revision_of
from .specdiff import is_split
from .synced import SyncedType, SyncKey, applied_key
from .transform import keep_scale_owners
from .tunnel import Tunnel
from .up import StatusUp
from .upsync import (
    EVENTS,
    MIRRORED,
    OWNED_ONLY,
    UPSYNC,
    Owners,
    Subject,
    Upsync,
    UpsyncedType,
    event_subject,
    kcp_owner_reference,
    queue_resource,
    upstream_key,
)

if TYPE_CHECKING:
    from . import SyncerOptions

log = structlog.get_logger("kcpsyncer")

GOING_FIRST = "the user is deleting it in kcp, and a pod it controls next"
FACELESS = "nothing in kcp stands for it any more (its split Deployment and its revision were deleted), and the user is deleting a pod it controls"
PODS, REPLICA_SETS, DEPLOYMENTS = "pods", "replicasets.apps", "deployments.apps"
CONFLICT_RETRY = 0.5  # seconds: a safety net, the conflicting change's event normally requeues first
REVISION_RETRY = 10.0  # seconds: a safety net for a pod waiting for its revision in kcp (its arrival requeues it)


class Syncer:
    """One syncer's informers, queue and workers (see the module docstring)."""

    def __init__(self, options: SyncerOptions, *, registry: CollectorRegistry | None = None,
                 served_workspaces: Callable[[], int] | None = None) -> None:
        self.options = options
        self._served_workspaces = served_workspaces  # reported with the heartbeat (placed.py counts them)
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
        self.upsynced: dict[str, UpsyncedType] = {}  # kinds mirrored up (pods, claims), by queue resource
        self.events: UpsyncedType | None = None  # the Events of the objects synced and mirrored
        self.revisions: SharedInformer | None = None  # kcp's ReplicaSets: the revisions of split Deployments
        self._awaiting_revision: dict[str, set[SyncKey]] = {}  # split root's uid -> pod keys waiting for a revision
        self._unserved: set[str] = set(options.resources)  # not (yet) served on both sides
        self._discovered = False  # discovery has answered once
        self._reported_unserved: set[str] = set()  # logged once each, not on every look
        # per (type, selector): a claim is both synced down and mirrored up, through one cache
        self._per_namespace_informers: dict[tuple[str, str, str | None], PerNamespaceInformer] = {}
        self._log = log.bind(logical_cluster=self.lc, sync_target=self.target)
        self.namespaces = DownstreamNamespaces(
            self.down, logical_cluster=self.lc, owner=self.owner, log=self._log,
            sync_target_key=sync_target_key(options.sync_target_workspace or self.lc, self.target))
        self.autoscalers = Autoscalers(self.types)
        self.spec_down = SpecDown(up=self.up, namespaces=self.namespaces,
                                  classes=ClassNames(self.types, logical_cluster=self.lc),
                                  autoscalers=self.autoscalers, logical_cluster=self.lc,
                                  sync_target=self.target, metrics=self.metrics, log=self._log)
        self.status_up = StatusUp(sync_target=self.target, metrics=self.metrics)
        self.removal = Removal(spec_down=self.spec_down, status_up=self.status_up, metrics=self.metrics,
                               log=self._log)
        self.upsync = Upsync(logical_cluster=self.lc, sync_target=self.target, metrics=self.metrics, log=self._log)
        # the cluster's namespaces of ours: none may be left for the engine to be idle, and each is looked at
        # once listed, so one emptied while no syncer ran (a workspace draining off the cluster) is cleaned up
        self.owned_namespaces = self.informers.informer(
            cluster=self.target, api_version="v1", plural="namespaces", namespaced=False,
            label_selector=f"{OWNER_LABEL}={self.owner}", clients=options.downstream)
        self.owned_namespaces.add_handler(on_add=self._namespace_seen, name=f"syncer:{self.target}:namespaces")

    # --- running ---

    async def run(self, *, ready: asyncio.Event | None = None) -> None:
        """Discover the types, run informers, workers and the heartbeat until cancelled."""
        self._log.info("syncer starting", resources=list(self.options.resources))
        tasks = [spawn(self.controller.start(), name=f"{self.controller.name}:controller")]
        if self.options.heartbeat:
            heartbeat = heartbeat_loop(up=self.up, down=self.down, sync_target=self.target,
                                       interval=self.options.heartbeat_interval,
                                       synced_resources=self._synced_resources, metrics=self.metrics, log=self._log,
                                       served_workspaces=self._served_workspaces)
            tasks.append(spawn(heartbeat, name=f"{self.controller.name}:heartbeat"))
        if self.options.tunnel:
            tunnel = Tunnel(upstream=self.options.upstream, downstream=self.options.downstream,
                            logical_cluster=self.lc, sync_target=self.target, owner=self.owner, log=self._log)
            tasks.append(spawn(tunnel.run(), name=f"{self.controller.name}:tunnel"))
        try:
            await self._discover_loop(ready)
            await asyncio.Event().wait()  # the tasks run until we are cancelled
        finally:
            await cancel_and_wait(*tasks, *(t.release for t in self.types.values() if t.release is not None),
                                  *(t.release for t in self.upsynced.values() if t.release is not None),
                                  *([self.events.release] if self.events and self.events.release else []))
            await self.informers.stop()
            for informer in self._per_namespace_informers.values():
                await informer.stop()
            self._log.info("syncer stopped")

    @property
    def idle(self) -> bool:
        """Nothing of this syncer's is left downstream, as far as it can tell: its types are discovered, every
        cache of its own downstream objects (namespaces, synced kinds, mirrored kinds) has listed and holds
        nothing, and no key is queued or in flight (a namespace cleanup included). What the placed-workspaces
        supervisor waits for before it stops the engine of a workspace no longer placed here: stopping earlier
        would orphan what it synced. Events are not ours (the cluster's, read unselected) and do not count."""
        if not self._discovered or len(self.controller.queue) or self.controller.queue.in_flight:
            return False
        owned = [self.owned_namespaces, *(t.down_informer for t in (*self.types.values(), *self.upsynced.values()))]
        return all(informer.has_synced and not _holds_any(informer) for informer in owned)

    def _synced_resources(self) -> list[str]:
        """The types whose caches have all listed: what the heartbeat reports as synced."""
        synced = {t.name for t in self.types.values() if t.synced}
        return sorted(synced | {t.name for t in self.upsynced.values() if t.synced})

    async def _discover_loop(self, ready: asyncio.Event | None) -> None:
        """Resolve every type on both sides, again every `discovery_retry` s while some are not served;
        a failed discovery is retried with backoff (0.8 s doubling to 30 s), not on that period."""
        answered = False
        failures = Backoff()
        while True:
            delay = self.options.discovery_retry
            try:
                await self._discover()
                answered = self._discovered = True
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
        """Every type not served yet, resolved on both sides at once (one after the other, 16 types took a new
        engine of a placed workspace ~10 s on a busy kcp before its first object went down)."""
        names = sorted(self._unserved)
        for name, (up, down, per_namespace) in zip(names, await asyncio.gather(*map(self._resolve, names)),
                                                    strict=True):
            if up is None or down is None:
                if name not in self._reported_unserved:
                    self._reported_unserved.add(name)
                    self._log.info("type not served; not synced yet", resource=name, upstream=up is not None,
                                   downstream=down is not None)
                continue
            self._add_type(name, up, down, per_namespace=per_namespace)
            self._unserved.discard(name)
        if self.events is None:
            events = APIType("v1", EVENTS, "Event", namespaced=True, has_status=False)
            self._add_events(events, per_namespace=not await readable_cluster_wide(self.down, events))
        self.metrics.types(len(self.types))
        self.informers.start()

    async def _resolve(self, name: str) -> tuple[APIType | None, APIType | None, bool]:
        """The type upstream and downstream (None where not served), and whether downstream it is read one
        namespace at a time (this identity may not list it cluster-wide)."""
        up, down = await asyncio.gather(resolve(self.up, name), resolve(self.down, name))
        per_namespace = down is not None and down.namespaced and not await readable_cluster_wide(self.down, down)
        return up, down, per_namespace

    def _add_type(self, name: str, up: APIType, down: APIType, *, per_namespace: bool = False) -> None:
        if name in MIRRORED:
            self._add_upsynced_type(name, up, down, per_namespace=per_namespace)
            if not MIRRORED[name]:
                return
        up_informer = self.informers.informer(cluster=self.lc, api_version=up.api_version, plural=up.plural,
                                              namespaced=up.namespaced, label_selector=self.selector)
        down_informer = self._downstream_informer(down, per_namespace=per_namespace)
        state_informer = self.informers.informer(cluster=self.lc, api_version=up.api_version, plural=up.plural,
                                                 namespaced=up.namespaced, label_selector=self.state_selector)
        typ = SyncedType(name, up, down, up.resource(self.up), down.resource(self.down), up_informer, down_informer,
                         state_informer)
        self.types[name] = typ
        for informer in (up_informer, state_informer):
            informer.add_handler(on_add=lambda obj: self._upstream_changed(name, obj),
                                 on_update=lambda old, new: self._upstream_changed(name, new, old),
                                 on_delete=lambda obj: self._upstream_changed(name, deleted_object(obj)),
                                 name=f"syncer:{self.target}")
        down_informer.add_handler(on_add=lambda obj: self._downstream_changed(name, None, obj),
                                  on_update=lambda old, new: self._downstream_changed(name, old, new),
                                  on_delete=lambda obj: self._downstream_deleted(name, obj),
                                  name=f"syncer:{self.target}")
        self._log.info("syncing type", resource=name, upstream=up.api_version, downstream=down.api_version,
                       per_namespace=per_namespace)

    def _downstream_informer(self, down: APIType, *, per_namespace: bool,
                             owned: bool = True) -> SharedInformer | PerNamespaceInformer:
        """The cluster's objects of `down` (this syncer's, if `owned`): one watch, or one per namespace of ours
        when the type may not be read cluster-wide."""
        selector = f"{OWNER_LABEL}={self.owner}" if owned else None
        if not per_namespace:
            return self.informers.informer(cluster=self.target, api_version=down.api_version, plural=down.plural,
                                           namespaced=down.namespaced, label_selector=selector,
                                           clients=self.options.downstream)
        known = self._per_namespace_informers.get((down.api_version, down.plural, selector))
        if known is not None:
            return known
        namespaces = self.informers.informer(cluster=self.target, api_version="v1", plural="namespaces",
                                             namespaced=False, label_selector=f"{OWNER_LABEL}={self.owner}",
                                             clients=self.options.downstream)
        informer = PerNamespaceInformer(self.down, down, cluster=self.target, namespaces=namespaces,
                                        label_selector=selector, transform=keep_scale_owners,
                                        own=self._mapped_here)
        self._per_namespace_informers[(down.api_version, down.plural, selector)] = informer
        return informer

    def _mapped_here(self, namespace: Obj) -> bool:
        """`namespace` is named after the upstream namespace its locator names (one the controller binds)."""
        origin = downstream_origin(namespace)
        return origin is not None and meta(namespace).get("name") == downstream_namespace(self.lc, origin)

    def _add_upsynced_type(self, name: str, up: APIType, down: APIType, *, per_namespace: bool) -> None:
        """A type mirrored up (upsync.py): kcp's copies for this target, the cluster's objects of this syncer."""
        up_informer = self.informers.informer(cluster=self.lc, api_version=up.api_version, plural=up.plural,
                                              namespaced=up.namespaced,
                                              label_selector=f"{state_label(self.target)}={UPSYNC}")
        down_informer = self._downstream_informer(down, per_namespace=per_namespace)
        typ = UpsyncedType(name, up, down, up.resource(self.up), down.resource(self.down), up_informer,
                           down_informer)
        resource = queue_resource(name)
        self.upsynced[resource] = typ
        if name == REPLICA_SETS:
            self._add_revisions(up)
        self._attach_revisions()

        def upstream(obj: Obj) -> None:
            namespace, pod = str(meta(obj).get("namespace") or ""), str(meta(obj).get("name") or "")
            self.controller.enqueue(SyncKey(resource, namespace, pod))
            self._owner_arrived(typ, namespace, pod)
            if self.events is not None:  # a new copy of the pod: its Events name the copy's uid
                for event in self.events.down_informer.indexer.by_index(
                        NAMESPACE_INDEX, downstream_namespace(self.lc, namespace)):
                    if (event.get("involvedObject") or {}).get("name") == pod:
                        self.controller.enqueue(SyncKey(EVENTS, namespace, str(meta(event).get("name") or "")))

        def upstream_deleted(obj: Obj) -> None:
            final = deleted_object(obj)
            key = SyncKey(resource, str(meta(final).get("namespace") or ""), str(meta(final).get("name") or ""))
            self.upsync.upstream_deleted(typ, key)
            self.controller.enqueue(key)

        def downstream(obj: Obj) -> None:
            key = upstream_key(resource, deleted_object(obj), self.lc)
            if key is not None:
                self.controller.enqueue(key)

        up_informer.add_handler(on_add=upstream, on_update=lambda old, new: upstream(new), on_delete=upstream_deleted,
                                name=f"syncer:{self.target}:upsync")
        def downstream_deleted(obj: Obj) -> None:
            downstream(obj)
            namespace = meta(deleted_object(obj)).get("namespace")
            if namespace:  # the last of them may leave an empty namespace of ours
                self.controller.enqueue(SyncKey("", "", str(namespace)))

        down_informer.add_handler(on_add=downstream, on_update=lambda old, new: downstream(new),
                                  on_delete=downstream_deleted, name=f"syncer:{self.target}:upsync")
        self._log.info("mirroring type up", resource=name, upstream=up.api_version, downstream=down.api_version)

    def _add_revisions(self, up: APIType) -> None:
        """kcp's ReplicaSets, all of them (the splitter's revisions carry no label of this target), by controller."""
        self.revisions = self.informers.informer(cluster=self.lc, api_version=up.api_version, plural=up.plural,
                                                 namespaced=True)
        self.revisions.add_indexers({CONTROLLER_UID_INDEX: controller_uid_index}, skip_existing=True)
        self.revisions.add_handler(on_add=self._revision_arrived, on_update=lambda old, new: self._revision_arrived(new),
                                   name=f"syncer:{self.target}:revisions")

    def _attach_revisions(self) -> None:
        """A pod's reconcile reads kcp's revisions: its keys wait for that cache to list too."""
        pods = self.upsynced.get(queue_resource(PODS))
        if pods is not None and self.revisions is not None and self.revisions not in pods.also_read:
            pods.also_read.append(self.revisions)

    def _add_events(self, events: APIType, *, per_namespace: bool) -> None:
        """The Events of the synced and mirrored objects: one downstream reflector of the cluster's Events, or
        one per namespace of ours (the others are dropped by `event_subject`), kcp's copies for this target."""
        up_informer = self.informers.informer(cluster=self.lc, api_version="v1", plural=EVENTS, namespaced=True,
                                              label_selector=f"{state_label(self.target)}={UPSYNC}")
        down_informer = self._downstream_informer(events, per_namespace=per_namespace, owned=False)
        self.events = UpsyncedType(EVENTS, events, events, events.resource(self.up), events.resource(self.down),
                                   up_informer, down_informer)

        def downstream(obj: Obj) -> None:
            event = deleted_object(obj)
            key = self.upsync.event_key(event, self._event_subject(event))
            if key is not None:
                self.controller.enqueue(key)

        def upstream(obj: Obj) -> None:
            final = deleted_object(obj)
            self.controller.enqueue(SyncKey(EVENTS, str(meta(final).get("namespace") or ""),
                                            str(meta(final).get("name") or "")))

        down_informer.add_handler(on_add=downstream, on_update=lambda old, new: downstream(new), on_delete=downstream,
                                  name=f"syncer:{self.target}:events")
        up_informer.add_handler(on_add=upstream, on_update=lambda old, new: upstream(new), on_delete=upstream,
                                name=f"syncer:{self.target}:events")

    # --- event handlers: queue the upstream key ---

    def _namespace_seen(self, namespace: Obj) -> None:
        """Look whether a namespace of ours is empty, only while every type is served on both sides: one holding
        only objects of a type not (yet) served upstream looks empty, and must not go."""
        if not self._unserved:
            self.controller.enqueue(SyncKey("", "", str(meta(namespace).get("name") or "")))

    def _upstream_changed(self, resource: str, obj: Obj, old: Obj | None = None) -> None:
        upstream_meta = meta(obj)
        key = SyncKey(resource, str(upstream_meta.get("namespace") or ""), str(upstream_meta.get("name") or ""))
        self.spec_down.upstream_changed(key)
        self.removal.note(key, obj)
        self.controller.enqueue(key)
        if old is not None and key.namespace and is_split(old, self.target) != is_split(obj, self.target):
            self._split_changed(resource, key)
        if not key.namespace:  # a class that referrers may be held for
            for held in sorted(self.spec_down.class_arrived(resource, key.name)):
                self.controller.enqueue(held)

    def _upstream_key(self, resource: str, obj: Obj) -> SyncKey | None:
        return applied_key(resource, obj, self.lc)

    def _downstream_changed(self, resource: str, old: Obj | None, new: Obj) -> None:
        key = self._upstream_key(resource, new)
        if key is None:
            return
        self.spec_down.downstream_changed(key)
        self.status_up.downstream_changed(key, old, new)
        self.controller.enqueue(key)
        if resource == AUTOSCALERS:
            self._autoscaler_moved(key, old, new)

    def _downstream_deleted(self, resource: str, obj: Obj | DeletedFinalStateUnknown) -> None:
        final = deleted_object(obj)
        key = self._upstream_key(resource, final)
        if key is not None:
            self.spec_down.downstream_changed(key)
            self.controller.enqueue(key)
            if resource == AUTOSCALERS:
                self._autoscaler_moved(key, final, None)
        namespace = meta(final).get("namespace")
        if namespace and resource in self.types:
            self._requeue_dependents(self.types[resource].down.kind, str(namespace), str(meta(final).get("name") or ""))
        if namespace:  # its namespace may be empty now
            self.controller.enqueue(SyncKey("", "", str(namespace)))

    def _autoscaler_moved(self, key: SyncKey, old: Obj | None, new: Obj | None) -> None:
        """The workloads an autoscaler starts or stops scaling: whose replicas become the cluster's, or kcp's again."""
        for hpa in (old, new):
            target = self.autoscalers.target_key(hpa) if hpa is not None else None
            if target is not None:
                self.controller.enqueue(SyncKey(target[0], key.namespace, target[1]))

    # --- reconcile ---

    def _downstream_namespace(self, typ: SyncedType, namespace: str) -> str | None:
        return downstream_namespace(self.lc, namespace) if typ.down.namespaced and namespace else None

    async def _reconcile(self, key: SyncKey) -> Result | None:
        if not key.resource:
            caches: list[SyncedType | UpsyncedType] = [*self.types.values(), *self.upsynced.values()]
            for typ_caches in caches:
                if not typ_caches.synced:  # what is left in it cannot be told yet
                    self._hold_until_synced(typ_caches, key)
                    return None
            return await self.namespaces.cleanup(
                key.name, self.types.values(), self.upsynced.values(),
                found=self.owned_namespaces.indexer.get(ObjectKey(self.target, "", key.name)))
        if key.resource == EVENTS and self.events is not None:
            return await self._reconcile_event(self.events, key)
        mirrored = self.upsynced.get(key.resource)
        if mirrored is not None:
            return await self._reconcile_upsynced(mirrored, key)
        typ = self.types.get(key.resource)
        if typ is None:
            return None
        if not typ.synced:  # absence in a cache that has not listed yet proves nothing
            self._hold_until_synced(typ, key)
            return None
        down_ns = self._downstream_namespace(typ, key.namespace)
        down_name = key.name if typ.down.namespaced else downstream_name(self.lc, key.name)
        up = typ.upstream(ObjectKey(self.lc, key.namespace, key.name))
        down = typ.down_informer.indexer.get(ObjectKey(self.target, down_ns or "", down_name))
        if up is None:
            up = await absent_upstream(typ, key)
        try:
            if up is not None and not deleting(up) and not assigned_to(meta(up).get("labels"), self.target) \
                    and is_split(up, self.target):
                # a client dropped every label (`kubectl apply` of `labels: null`), and with them kcp's assignment,
                # but this target's share (its spec diff) is still there: the splitter puts the label back, so the
                # copy stays as it is rather than going and coming back with new pods
                return None
            if up is None or deleting(up) or not assigned_to(meta(up).get("labels"), self.target):
                return await self.removal.remove(typ, key, up, down, down_ns)
            try:
                applied_hash = await self.spec_down.sync(typ, key, up, down, down_ns, down_name)
            except MissingClass as missing:
                self.metrics.error("ClassNotFound")
                return Result(requeue_after=await self.spec_down.wait_for_class(key, up, missing))
            # an invalid spec diff (None) applied nothing: the cluster's status is reported as not of this generation
            await self.status_up.sync(typ, key, up, down, applied_hash or "")
        except APIConflictError:
            # our cached upstream copy is stale (the change's own event requeues the key): not a failure
            self.metrics.error("Conflict")
            return Result(requeue_after=CONFLICT_RETRY)
        return None

    async def _reconcile_upsynced(self, typ: UpsyncedType, key: SyncKey) -> Result | None:
        if not typ.synced:  # absence in a cache that has not listed yet proves nothing
            self._hold_until_synced(typ, key)
            return None
        awaited: set[str] = set()

        def owners_of(down: Obj) -> Owners:
            owners = self._kcp_owners(down)
            if owners.awaiting is not None:
                awaited.add(owners.awaiting)
            return owners

        try:
            complete = await self.upsync.reconcile(typ, key, owners_of, self._release_going_owners)
        except APIConflictError:
            self.metrics.error("Conflict")
            return Result(requeue_after=CONFLICT_RETRY)
        if complete:
            for uid, keys in list(self._awaiting_revision.items()):  # it waits no longer (mirrored, or gone)
                keys.discard(key)
                if not keys:
                    del self._awaiting_revision[uid]
            return None
        if awaited:  # the splitter makes the revision when it will: its arrival queues the key (`_revision_arrived`)
            for uid in awaited:
                self._awaiting_revision.setdefault(uid, set()).add(key)
            return Result(requeue_after=REVISION_RETRY)
        return Result(requeue_after=CONFLICT_RETRY)  # an owner is on its way to kcp

    def _owner_arrived(self, owner: UpsyncedType, namespace: str, name: str) -> None:
        """A mirror copy is in kcp: the mirrors it owns take their reference to it now, not on their retry."""
        self._requeue_dependents(owner.down.kind, downstream_namespace(self.lc, namespace), name)

    def _split_changed(self, resource: str, key: SyncKey) -> None:
        """An object split (or no longer): its cluster's ReplicaSets lose (or get) their copies, and their pods'
        copies change controller (revisions.py)."""
        typ = self.types.get(resource)
        if typ is None:
            return
        down_ns = downstream_namespace(self.lc, key.namespace)
        self._requeue_dependents(typ.down.kind, down_ns, key.name)
        for dependents in self.upsynced.values():
            for down in dependents.down_informer.indexer.by_index(NAMESPACE_INDEX, down_ns):
                if any(isinstance(r, dict) and r.get("kind") == typ.down.kind and r.get("name") == key.name
                       for r in meta(down).get("ownerReferences") or ()):
                    self._requeue_dependents(dependents.down.kind, down_ns, str(meta(down).get("name") or ""))

    def _requeue_dependents(self, kind: str, down_namespace: str, name: str) -> None:
        """Queue the mirrors of the cluster's objects that `kind` `name` owns: an owner that arrived gives them
        their reference; a synced owner gone from the cluster ends their mirrors now (a ReplicaSet of a deleted
        Deployment is garbage there), not when the cluster's garbage collector gets to them."""
        for dependents in self.upsynced.values():
            for down in dependents.down_informer.indexer.by_index(NAMESPACE_INDEX, down_namespace):
                if any(isinstance(r, dict) and r.get("kind") == kind and r.get("name") == name
                       for r in meta(down).get("ownerReferences") or ()):
                    key = upstream_key(dependents.name, down, self.lc)
                    if key is not None:
                        self.controller.enqueue(SyncKey(queue_resource(dependents.name), key.namespace, key.name))

    async def _release_going_owners(self, down: Obj) -> None:
        """Before a pod goes from the cluster for a user's delete of its copy, its controller goes first when the
        user is deleting that controller too, in kcp (`kubectl delete rs,pods --all`): a user's ReplicaSet synced
        down, or the copy of one a synced Deployment made. Else the ReplicaSet, still there, would replace the
        pod in between. With the delete's policy, as the kcp object shows it."""
        namespace = str(meta(down).get("namespace") or "")
        for ref in meta(down).get("ownerReferences") or ():
            if not isinstance(ref, dict) or not ref.get("controller"):
                continue
            for typ in self.types.values():  # a user's own ReplicaSet, synced down: its kcp object shows the delete
                if typ.down.kind != ref.get("kind"):
                    continue
                owner = typ.down_informer.indexer.get(ObjectKey(self.target, namespace, str(ref.get("name") or "")))
                applied = applied_key(typ.name, owner, self.lc) if owner is not None else None
                if owner is None or applied is None or meta(owner).get("deletionTimestamp") \
                        or meta(owner).get("uid") != ref.get("uid"):
                    continue
                up = typ.upstream(ObjectKey(self.lc, applied.namespace, applied.name))
                if up is not None and deleting(up):
                    await self.upsync.delete_downstream(typ.down_resource, owner, propagation_policy=propagation_of(up),
                                                        why=GOING_FIRST)
            for owners in self.upsynced.values():
                if owners.down.kind != ref.get("kind"):
                    continue
                owner = owners.down_informer.indexer.get(ObjectKey(self.target, namespace, str(ref.get("name") or "")))
                if owner is None or meta(owner).get("deletionTimestamp") or meta(owner).get("uid") != ref.get("uid"):
                    continue
                key = upstream_key(owners.name, owner, self.lc)
                if key is None:
                    continue
                if owners.name in OWNED_ONLY and await self._faceless(owner, key.namespace):
                    await self.upsync.delete_downstream(owners.down_resource, owner, why=FACELESS,
                                                        propagation_policy="Orphan")
                    continue
                copy = owners.up_informer.indexer.get(ObjectKey(self.lc, key.namespace, key.name))
                going = copy is not None and meta(copy).get("deletionTimestamp")
                if going or SyncKey(queue_resource(owners.name), key.namespace, key.name) in owners.deleted_by_user:
                    await self.upsync.delete_downstream(owners.down_resource, owner, why=GOING_FIRST,
                                                        propagation_policy=propagation_of(copy) if copy else None)

    async def _faceless(self, down_rs: Obj, namespace: str) -> bool:
        """A cluster's ReplicaSet made by a split Deployment's copy (never mirrored: kcp's revision of its template
        stands for it) whose Deployment and revision the user deleted in kcp: nothing stands for it any more, so it
        must not replace the pods the user deletes. What the caches say stands is read again from kcp: the user's
        deletes came before the pod's, but the caches follow other watches, which may lag."""
        mirrored = self.upsynced.get(queue_resource(REPLICA_SETS))
        if self.revisions is None or not self.revisions.has_synced or mirrored is None:
            return False
        root = self._split_controller(down_rs)
        deployments = self.types.get(DEPLOYMENTS)
        if root is not None and not deleting(root) and deployments is not None \
                and await _stands(deployments.up_resource, root):
            return False  # its split Deployment stands for it
        for face in faces_of(down_rs, namespace, self.revisions.indexer.by_index(NAMESPACE_INDEX, namespace)):
            if not deleting(face) and await _stands(mirrored.up_resource, face):
                return False
        key = upstream_key(mirrored.name, down_rs, self.lc)
        return key is None or mirrored.up_informer.indexer.get(ObjectKey(self.lc, key.namespace, key.name)) is None

    def _synced_controller(self, down: Obj) -> Obj | None:
        """The upstream object of the synced-down object that controls downstream object `down`, if one does."""
        namespace = str(meta(down).get("namespace") or "")
        for ref in meta(down).get("ownerReferences") or ():
            if not isinstance(ref, dict) or not ref.get("controller"):
                continue
            group = str(ref.get("apiVersion") or "").rpartition("/")[0]
            for typ in self.types.values():
                if typ.down.kind != ref.get("kind") or typ.down.api_version.rpartition("/")[0] != group:
                    continue
                owner = typ.down_informer.indexer.get(ObjectKey(self.target, namespace, str(ref.get("name") or "")))
                key = applied_key(typ.name, owner, self.lc) if owner is not None else None
                if owner is not None and key is not None and meta(owner).get("uid") == ref.get("uid"):
                    return typ.upstream(ObjectKey(self.lc, key.namespace, key.name))
        return None

    def _split_controller(self, down: Obj) -> Obj | None:
        """The upstream object controlling `down` downstream when it is split on this target (`specdiff.py`)."""
        root = self._synced_controller(down)
        return root if root is not None and is_split(root, self.target) else None

    def _unmirrored(self, typ: UpsyncedType, down: Obj) -> bool:
        """A cluster's object of a mirrored kind that has no copy in kcp by rule: a split Deployment's ReplicaSet."""
        return typ.name in OWNED_ONLY and self._split_controller(down) is not None

    def _revision(self, down_rs: Obj, root: Obj) -> Obj | None:
        """kcp's ReplicaSet of the split `root` for the cluster's ReplicaSet `down_rs` (revisions.py), if cached."""
        if self.revisions is None or not self.revisions.has_synced:
            return None
        candidates = self.revisions.indexer.by_index(CONTROLLER_UID_INDEX, str(meta(root).get("uid") or ""))
        return revision_of(down_rs, root, candidates)

    def _revision_arrived(self, rs: Obj) -> None:
        """A revision in kcp: the pods waiting for it get their copies now, not on their retry."""
        uid = controller_uid(rs)
        for key in sorted(self._awaiting_revision.pop(uid, set()) if uid else ()):
            self.controller.enqueue(key)

    def _kcp_owners(self, down: Obj) -> Owners:
        """A downstream object's ownerReferences pointed at kcp's objects of the chain (see upsync.py)."""
        namespace = str(meta(down).get("namespace") or "")
        found: list[dict[str, Any]] = []
        missing = controlled_by_synced = controlled_by_split = controller_gone = False
        awaiting: str | None = None
        for ref in meta(down).get("ownerReferences") or ():
            if not isinstance(ref, dict):
                continue
            kind, group = ref.get("kind"), str(ref.get("apiVersion") or "").rpartition("/")[0]
            down_key = ObjectKey(self.target, namespace, str(ref.get("name") or ""))
            up, synced, listed = None, False, False
            for typ in self.types.values():
                if typ.down.kind != kind or typ.down.api_version.rpartition("/")[0] != group:
                    continue
                owner = typ.down_informer.indexer.get(down_key)
                key = applied_key(typ.name, owner, self.lc) if owner is not None else None
                if owner is not None and key is not None and meta(owner).get("uid") == ref.get("uid"):
                    up, synced = typ.upstream(ObjectKey(self.lc, key.namespace, key.name)), True
                    listed = typ.synced
            for mirrored in self.upsynced.values():
                if up is not None or mirrored.down.kind != kind or mirrored.down.api_version.rpartition("/")[0] != group:
                    continue
                owner = mirrored.down_informer.indexer.get(down_key)
                key = upstream_key(mirrored.name, owner, self.lc) if owner is not None else None
                if owner is not None and key is not None and meta(owner).get("uid") == ref.get("uid"):
                    root = self._split_controller(owner) if mirrored.name in OWNED_ONLY else None
                    if root is not None:  # not mirrored: its revision in kcp stands for it (revisions.py)
                        up = self._revision(owner, root)
                        if up is None and ref.get("controller"):
                            awaiting = str(meta(root).get("uid") or "")
                    else:
                        up = mirrored.up_informer.indexer.get(ObjectKey(self.lc, key.namespace, key.name))
                    missing = missing or up is None
            if synced and up is None:
                missing = True
            controlled = synced and bool(ref.get("controller"))
            controller_gone = controller_gone or (controlled and up is None and listed)
            controlled_by_synced = controlled_by_synced or controlled
            controlled_by_split = controlled_by_split or (controlled and up is not None and is_split(up, self.target))
            if up is not None:
                found.append(kcp_owner_reference(ref, up))
        return Owners(found, missing=missing, controlled_by_synced=controlled_by_synced,
                      controlled_by_split=controlled_by_split, awaiting=awaiting, controller_gone=controller_gone)

    def _event_subject(self, event: Obj) -> Subject | None:
        return event_subject(event, mirrored=self.upsynced.values(), synced=self.types.values(),
                             logical_cluster=self.lc, sync_target=self.target, unmirrored=self._unmirrored)

    async def _reconcile_event(self, events: UpsyncedType, key: SyncKey) -> Result | None:
        if not events.synced:
            self._hold_until_synced(events, key)
            return None
        if not all(t.synced for t in (*self.upsynced.values(), *self.types.values())):
            return Result(requeue_after=CONFLICT_RETRY)  # what it is about cannot be told yet
        subjects: list[Subject] = []

        def subject_of(event: Obj) -> Subject | None:
            subject = self._event_subject(event)
            subjects.extend([subject] if subject is not None else [])
            return subject

        if not await self.upsync.reconcile_event(events, key, subject_of):
            waiting = any(SyncKey(queue_resource(s.key.resource), s.key.namespace, s.key.name) in keys
                          for s in subjects for keys in self._awaiting_revision.values())
            # a pod waiting for its revision may wait long: its copy's arrival queues its Events anyway
            return Result(requeue_after=REVISION_RETRY if waiting else CONFLICT_RETRY)
        return None

    def _hold_until_synced(self, typ: SyncedType | UpsyncedType, key: SyncKey) -> None:
        """Queue `key` again the moment its type's caches have all listed (not after a fixed delay)."""
        typ.waiting.add(key)
        if typ.release is None:
            typ.release = spawn(self._release_when_synced(typ), name=f"{self.controller.name}:{typ.name}:synced")

    async def _release_when_synced(self, typ: SyncedType | UpsyncedType) -> None:
        await asyncio.gather(*(informer.wait_for_sync() for informer in typ.informers))
        keys, typ.waiting, typ.release = typ.waiting, set(), None
        for key in sorted(keys):
            self.controller.enqueue(key)


def _holds_any(informer: SharedInformer | PerNamespaceInformer) -> bool:
    if isinstance(informer, PerNamespaceInformer):
        return informer.holds_any
    return len(informer.indexer) > 0


async def _stands(resource: DynamicResource, obj: Obj) -> bool:
    """`obj` (that very one: its uid) is in kcp and not being deleted, as kcp answers now."""
    try:
        found = await resource.get(str(meta(obj).get("name") or ""), namespace=str(meta(obj).get("namespace") or "")
                                   or None)
    except APINotFoundError:
        return False
    return meta(found).get("uid") == meta(obj).get("uid") and not deleting(found)
