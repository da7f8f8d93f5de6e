"""Wiring: informers over every logical cluster, the enqueue rules, the controllers.

- `deployment-splitter`, keyed by root: queued when the root changes (its shares' status comes as its
  syncers' annotations on it) and, for every root of a logical cluster, when a SyncTarget there
  changes in a way placement reads (`placement_facts`: not its heartbeat; a target inside its grace
  period comes back through each root's `requeue_after`); every root of a namespace when a
  PodDisruptionBudget there comes, goes or changes its spec (disruption.py);
- `dependencies`, keyed by namespace: queued when a dependency in it changes, or a Deployment starts
  or stops using something (`uses_index`: not a status update);
- `namespaces`, keyed by namespace: queued when the Namespace, an object in it or a SyncTarget of its
  logical cluster changes (as above);
- `placements`, keyed by Placement: queued when it changes, a Location or SyncTarget of its compute workspace
  changes, or a Namespace of its workspace comes, goes or is relabelled; a placed namespace is also queued for
  `namespaces` when a SyncTarget it is placed on changes, its Placement changes, or a root's shares in it
  change (a namespace leaving a SyncTarget waits for its shares there to go);
- `classes`, keyed by logical cluster: queued when a class changes, or an object starts or stops naming
  one where it is placed (`classes_index`);
- `evictions`, keyed by SyncTarget (cordoned or evicted): queued when it changes in a way its
  `status.eviction` reads, a Namespace placed or assigned on it changes, or a split Deployment's share on it
  comes, goes or is rescaled;
- `revisions`, keyed by root: queued when the root changes or a ReplicaSet it controls does; its
  workers start once ReplicaSets are served somewhere (a physical cluster brought them into kcp);
- `daemonsets`, keyed by DaemonSet (daemonsets.py): queued when it changes (its syncers' status annotations
  too), and, as roots are, when a SyncTarget of its logical cluster or of its namespace's placement changes;
- `endpoints`, keyed by Service (reconcile_endpoints.py): queued when it changes, when a mirrored pod it selects
  comes, goes or changes what its endpoint shows, or when one of its remote EndpointSlices is changed or deleted;
- `statefulset-history` and `daemonset-history`, keyed by set: queued when the set changes or a
  ControllerRevision it controls does; their workers start once both kinds are served.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Controller, Reconciler
from kcpcommon.identities import AcrossIdentities, BoundIdentities
from kcpcommon.informer import InformerView, deleted_object
from kcpcommon.informer_factory import SharedInformerFactory
from kcpcommon.keys import ASSIGNMENT_LABEL, ObjectKey, key_for, sync_target_key
from kcpcommon.sharding import owns
from kcpcommon.store import CLUSTER_INDEX, CLUSTER_NAMESPACE_INDEX, IndexReader, cluster_namespace_value

from .capacity import CapacityTracker
from .classes import CLASS_KINDS, CLASSES_INDEX, REFERRER_KINDS, classes_index
from .daemonsets import DAEMON_SETS
from .dependencies import KINDS
from .disruption import PDBS
from .endpoints import ENDPOINT_SLICES, SERVICE_NAME_LABEL, endpoint_facts, selected, selects_pods
from .expectations import Expectations
from .load import TargetLoad
from .names import COMPONENT, DEPLOYMENTS, REPLICA_SETS, SYNC_TARGETS
from .namespaces import WORKLOAD_KINDS
from .placements import (
    LOCATION_WORKSPACE_INDEX,
    LOCATIONS,
    PLACED_INDEX,
    PLACEMENTS,
    TARGET_KEY_INDEX,
    location_workspace_index,
    namespace_targets,
    placed_index,
    placed_keys,
    target_key_index,
)
from .reconcile import Splitter
from .reconcile_classes import ClassPlacer
from .reconcile_daemonsets import DaemonSetSpreader
from .reconcile_dependencies import USES_INDEX, DependencyPlacer, running_targets, uses_index
from .reconcile_endpoints import SLICE_OWNER_INDEX, RemoteEndpoints, slice_owner_index
from .reconcile_evictions import EvictionReporter, evicting, eviction_facts, split_shares
from .reconcile_history import CONTROLLER_REVISIONS, SET_OWNER_INDEX, SETS, SetHistory, set_of, set_owner_index
from .reconcile_namespaces import NamespaceScheduler
from .reconcile_placements import PlacementReconciler
from .reconcile_revisions import OWNER_INDEX, Revisions, controller_of, owner_index
from .settings import SplitterSettings
from .shares import is_root, shares_of
from .targets import placement_facts

EXPECTATIONS_TTL = 15.0  # seconds a write may take to show in the cache before the splitter decides anyway
BUILT_IN = ("ConfigMap", "Secret", "ServiceAccount")  # kcp serves these itself; the rest arrive as imports


def _running_on(deployment: Mapping[str, Any]) -> set[str]:
    """The targets a Deployment has replicas on."""
    return {target for target, replicas in shares_of(deployment).items() if replicas > 0}


def _on_change(informer: InformerView, handler: Callable[[Any], None], name: str) -> None:
    informer.add_handler(on_add=handler, on_update=lambda old, new: handler(new), on_delete=handler, name=name)


class SplitterController:
    """The informers and controllers of one elected replica."""

    def __init__(self, kcp: ClientFactory, settings: SplitterSettings, registry: CollectorRegistry) -> None:
        self.settings = settings
        self.registry = registry
        self.factory = SharedInformerFactory(kcp)
        self.identities = BoundIdentities(self.factory)  # types bound from an APIExport, in any workspace
        self.deployments = self._informer(*DEPLOYMENTS, namespaced=True)
        self.deployments.add_indexers({USES_INDEX: uses_index})
        self.targets = self._informer(*SYNC_TARGETS, namespaced=False)
        self.targets.add_indexers({TARGET_KEY_INDEX: target_key_index})
        tracker = CapacityTracker(grace_period=settings.capacity_grace_period,
                                  retry_period=settings.capacity_retry_period, clock=time.monotonic,
                                  wall=lambda: datetime.now(UTC))
        self.placed_namespaces: IndexReader | None = None  # the Namespaces, when the namespace rule runs
        self.load = TargetLoad(resolve=self._sync_target_of)
        load = self.deployments.add_handler(on_add=self.load.on_add, on_update=self.load.on_update,
                                            on_delete=self.load.on_delete, name="splitter-load")
        self.splitter = splitter = Splitter(kcp, deployments=self.deployments.indexer, targets=self.targets.indexer,
                                            grace_period=settings.grace_period, capacity=tracker, load=self.load,
                                            expectations=Expectations(ttl=EXPECTATIONS_TTL, clock=time.monotonic),
                                            registry=registry)
        # PodDisruptionBudgets are served only where a SyncTarget imports them: unserved is "none"
        self.budgets = self._informer(*PDBS, namespaced=True)
        splitter.budgets = self.budgets.indexer
        self.controller = self._controller("deployment-splitter", splitter.reconcile)
        self.running: list[tuple[Controller[ObjectKey], Callable[[], bool]]] = [
            (self.controller, lambda: self.deployments.has_synced and self.targets.has_synced and load.has_synced
             and self.budgets.synced_or_unserved)]
        self.budgets.add_handler(on_add=self._budget, on_update=self._budget_update, on_delete=self._budget,
                                 name="splitter-poddisruptionbudgets")
        self.replica_sets = self._informer(*REPLICA_SETS, namespaced=True)
        self.replica_sets.add_indexers({OWNER_INDEX: owner_index})
        revisions = Revisions(kcp, deployments=self.deployments.indexer, replica_sets=self.replica_sets.indexer,
                              events=splitter.events)
        self.revisions = self._controller("revisions", revisions.reconcile)
        self.running.append((self.revisions, lambda: self.deployments.has_synced and self.replica_sets.has_synced))
        _on_change(self.replica_sets, self._replica_set, "splitter-replicasets")
        self._keep_set_histories(kcp)
        self.daemonsets = self._informer(*DAEMON_SETS, namespaced=True)
        self.daemonsets.add_indexers({USES_INDEX: uses_index})
        self.spreader = DaemonSetSpreader(kcp, daemonsets=self.daemonsets.indexer, targets=self.targets.indexer,
                                          namespaces=None, grace_period=settings.grace_period,
                                          expectations=Expectations(ttl=EXPECTATIONS_TTL, clock=time.monotonic),
                                          events=splitter.events)
        self.spread = self._controller("daemonsets", self.spreader.reconcile)
        self.dependencies: Controller[ObjectKey] | None = None
        self.classes: Controller[ObjectKey] | None = None
        self.namespaces: Controller[ObjectKey] | None = None
        self.placements: Controller[ObjectKey] | None = None
        self.evictions: Controller[ObjectKey] | None = None
        objects: dict[str, AcrossIdentities] = {}
        if settings.place_dependencies or settings.schedule_namespaces:
            objects = {kind: self._informer(api_version, plural, namespaced=True)
                       for kind, (api_version, plural) in KINDS.items()}
        built_in = [objects[kind] for kind in BUILT_IN if kind in objects]
        if settings.place_dependencies:
            # the workloads that follow their namespace are a Service's callers too (a StatefulSet on its target)
            others = {kind: self._informer(api_version, plural, namespaced=True)
                      for kind, (api_version, plural) in WORKLOAD_KINDS.items() if kind != "DaemonSet"}
            placer = DependencyPlacer(kcp, workloads=(self.deployments.indexer, self.daemonsets.indexer),
                                      objects=objects, others=list(others.values()))
            if not settings.schedule_namespaces:  # else queued by the namespace rule's handlers, below
                for kind, informer in others.items():
                    _on_change(informer, self._in_namespace, f"splitter-{kind.lower()}")
            self.dependencies = self._controller("dependencies", placer.reconcile)
            self.running.append((self.dependencies, lambda: self.deployments.has_synced
                                 and all(i.has_synced for i in built_in)))
            self._place_classes(kcp)
        if settings.schedule_namespaces:
            self.namespace_informer = self._informer("v1", "namespaces", namespaced=False)
            self.namespace_informer.add_indexers({PLACED_INDEX: placed_index})
            self.placed_namespaces = splitter.namespaces = self.namespace_informer.indexer
            self.spreader.namespaces = self.namespace_informer.indexer
            if self.dependencies is not None:
                placer.namespaces = self.namespace_informer.indexer
            followers = {**objects, **{kind: self._informer(api_version, plural, namespaced=True)
                                       for kind, (api_version, plural) in WORKLOAD_KINDS.items()}}
            self._place(kcp)
            scheduler = NamespaceScheduler(kcp, namespaces=self.namespace_informer.indexer,
                                           targets=self.targets.indexer, objects=followers,
                                           grace_period=settings.grace_period,
                                           placements=self.placement_informer.indexer,
                                           deployments=self.deployments.indexer, events=splitter.events)
            self.namespaces = self._controller("namespaces", scheduler.reconcile)
            self.running.append((self.namespaces, lambda: self.namespace_informer.has_synced
                                 and self.targets.has_synced and all(i.has_synced for i in built_in)))
            self.namespace_informer.add_handler(on_add=self._namespace_object, on_update=self._namespace_update,
                                                on_delete=self._namespace_object, name="splitter-namespaces")
            for kind, informer in followers.items():
                if kind not in objects:
                    _on_change(informer, self._in_namespace, f"splitter-{kind.lower()}")
            self._report_evictions(kcp)
        for kind, informer in objects.items():
            _on_change(informer, self._in_namespace, f"splitter-{kind.lower()}")
        self.deployments.add_handler(on_add=self._deployment, on_update=self._deployment_update,
                                     on_delete=self._deployment, name="splitter-deployments")
        self.daemonsets.add_handler(on_add=self._daemonset, on_update=self._daemonset_update,
                                    on_delete=self._daemonset, name="splitter-daemonsets-spread")
        self.endpoints: Controller[ObjectKey] | None = None
        if settings.remote_endpoints:
            self._keep_remote_endpoints(kcp)
        namespaces_synced = self.namespace_informer if settings.schedule_namespaces else None
        self.running.append((self.spread, lambda: self.daemonsets.has_synced and self.targets.has_synced
                             and (namespaces_synced is None or namespaces_synced.has_synced)))
        self.targets.add_handler(on_add=self._target, on_update=self._target_update, on_delete=self._target,
                                 name="splitter-synctargets")

    def _place(self, kcp: ClientFactory) -> None:
        """The `placements` controller (reconcile_placements.py) and what queues it."""
        self.placement_informer = self._informer(*PLACEMENTS, namespaced=False)
        self.placement_informer.add_indexers({LOCATION_WORKSPACE_INDEX: location_workspace_index})
        self.location_informer = self._informer(*LOCATIONS, namespaced=False)
        reconciler = PlacementReconciler(kcp, placements=self.placement_informer.indexer,
                                         locations=self.location_informer.indexer, targets=self.targets.indexer,
                                         namespaces=self.namespace_informer.indexer)
        self.placements = placements = self._controller("placements", reconciler.reconcile)
        self.running.append((placements, lambda: self.placement_informer.has_synced
                             and self.location_informer.has_synced and self.targets.has_synced
                             and self.namespace_informer.has_synced))

        def placement_changed(obj: Any) -> None:
            key = key_for(deleted_object(obj))
            if self._mine(key.cluster):
                placements.enqueue(key)
                self._namespaces_of(key.cluster)

        def location_changed(obj: Any) -> None:
            self._placements_using(key_for(deleted_object(obj)).cluster)

        _on_change(self.placement_informer, placement_changed, "splitter-placements")
        _on_change(self.location_informer, location_changed, "splitter-locations")

    def _sync_target_of(self, cluster: str, namespace: str, target: str) -> str:
        """The key of the SyncTarget named `target` that a Deployment in `cluster`/`namespace` runs on: its
        workspace's own, or the one the namespace is placed on (shared compute)."""
        found, _ = namespace_targets(self.targets.indexer, self.placed_namespaces, cluster, namespace)
        for candidate in found:
            if (candidate.get("metadata") or {}).get("name") == target:
                return sync_target_key(key_for(candidate).cluster, target)
        return sync_target_key(cluster, target)

    def _report_evictions(self, kcp: ClientFactory) -> None:
        """The `evictions` controller (reconcile_evictions.py) and what queues it."""
        reporter = EvictionReporter(kcp, targets=self.targets.indexer, namespaces=self.namespace_informer.indexer,
                                    deployments=self.deployments.indexer, grace_period=self.settings.grace_period,
                                    now=lambda: datetime.now(UTC))
        self.evictions = evictions = self._controller("evictions", reporter.reconcile)
        self.running.append((evictions, lambda: self.targets.has_synced and self.namespace_informer.has_synced
                             and self.deployments.has_synced))

        def queue(keys: Any) -> None:
            for key in keys:
                target = self.targets.indexer.get(key)
                if target is not None and evicting(target) and self._mine(key.cluster):
                    evictions.enqueue(key)

        def target_changed(old: Any, new: Any) -> None:
            if eviction_facts(old) != eviction_facts(new):
                queue([key_for(new)])

        def on_namespace(namespace: Any) -> list[ObjectKey]:
            cluster = key_for(namespace).cluster
            keys = [k for value in placed_keys(namespace)
                    for k in self.targets.indexer.index_keys(TARGET_KEY_INDEX, value)]
            assigned = ((namespace.get("metadata") or {}).get("labels") or {}).get(ASSIGNMENT_LABEL)
            return keys + ([ObjectKey(cluster, "", assigned)] if assigned else [])

        def namespace_changed(old: Any, new: Any) -> None:
            if ((old.get("metadata") or {}).get("labels")) != ((new.get("metadata") or {}).get("labels")):
                queue({*on_namespace(old), *on_namespace(new)})

        def share(deployment: Any, targets: set[str] | None = None) -> None:
            deployment = deleted_object(deployment)
            targets = set(split_shares(deployment)) if targets is None else targets
            if not targets:
                return
            key = key_for(deployment)
            namespace = self.namespace_informer.indexer.get(ObjectKey(key.cluster, "", key.namespace))
            keys = on_namespace(namespace) if namespace is not None else [ObjectKey(key.cluster, "", t)
                                                                            for t in targets]
            queue(k for k in keys if k.name in targets)

        def share_changed(old: Any, new: Any) -> None:
            before, after = split_shares(old), split_shares(new)
            if before != after or bool((old.get("metadata") or {}).get("deletionTimestamp")) != bool(
                    (new.get("metadata") or {}).get("deletionTimestamp")):
                share(new, set(before) | set(after))

        self.targets.add_handler(on_add=lambda t: queue([key_for(t)]), on_update=target_changed,
                                 name="splitter-evictions")
        self.namespace_informer.add_handler(on_add=lambda n: queue(on_namespace(n)), on_update=namespace_changed,
                                            on_delete=lambda n: queue(on_namespace(deleted_object(n))),
                                            name="splitter-evictions-namespaces")
        self.deployments.add_handler(on_add=share, on_update=share_changed, on_delete=share,
                                     name="splitter-evictions-deployments")

    def _placements_using(self, workspace: str) -> None:
        """Queue the Placements whose Locations are in `workspace`."""
        if self.placements is None:
            return
        for key in self.placement_informer.indexer.index_keys(LOCATION_WORKSPACE_INDEX, workspace):
            if self._mine(key.cluster):
                self.placements.enqueue(key)

    def _namespaces_of(self, cluster: str) -> None:
        if self.namespaces is not None:
            for key in self.namespace_informer.indexer.index_keys(CLUSTER_INDEX, cluster):
                self.namespaces.enqueue(ObjectKey(cluster, "", key.name))

    def _placed_on(self, target: Any) -> None:
        """A SyncTarget changed: the namespaces placed on it, and their roots."""
        key = key_for(target)
        for namespace in self.namespace_informer.indexer.by_index(PLACED_INDEX, sync_target_key(key.cluster,
                                                                                                key.name)):
            located = key_for(namespace)
            if self._mine(located.cluster):
                self._placed_namespace(located.cluster, located.name)

    def _placed_namespace(self, cluster: str, namespace: str) -> None:
        """A placed namespace and every root in it."""
        if self.namespaces is not None:
            self.namespaces.enqueue(ObjectKey(cluster, "", namespace))
        cache = self.deployments.indexer
        for key in cache.index_keys(CLUSTER_NAMESPACE_INDEX, cluster_namespace_value(cluster, namespace)):
            deployment = cache.get(key)
            if deployment is not None and is_root(deployment):
                self.controller.enqueue(key)
        self._daemonsets_in(cluster, namespace)

    def _daemonsets_in(self, cluster: str, namespace: str | None = None) -> None:
        """The DaemonSets of a logical cluster (or of one namespace of it): where they run may change."""
        cache = self.daemonsets.indexer
        keys = cache.index_keys(CLUSTER_INDEX, cluster) if namespace is None else cache.index_keys(
            CLUSTER_NAMESPACE_INDEX, cluster_namespace_value(cluster, namespace))
        for key in keys:
            self.spread.enqueue(key)

    def _daemonset(self, obj: Any) -> None:
        """Added or deleted: its placement, and its namespace's dependencies if it uses any."""
        obj = deleted_object(obj)
        key = key_for(obj)
        if not self._mine(key.cluster):
            return
        if self.dependencies is not None and uses_index(obj):
            self.dependencies.enqueue(ObjectKey(key.cluster, "", key.namespace))
        self.spread.enqueue(key)

    def _daemonset_update(self, old: Any, new: Any) -> None:
        key = key_for(new)
        if not self._mine(key.cluster):
            return
        if self.dependencies is not None and (running_targets(old) != running_targets(new)
                                              or uses_index(old) != uses_index(new)):
            self.dependencies.enqueue(ObjectKey(key.cluster, "", key.namespace))
        self.spread.enqueue(key)

    def _budget(self, obj: Any) -> None:
        """A PodDisruptionBudget came or went: the roots of its namespace (which it selects is theirs to see)."""
        key = key_for(deleted_object(obj))
        if not self._mine(key.cluster):
            return
        cache = self.deployments.indexer
        for root in cache.index_keys(CLUSTER_NAMESPACE_INDEX, cluster_namespace_value(key.cluster, key.namespace)):
            deployment = cache.get(root)
            if deployment is not None and is_root(deployment):
                self.controller.enqueue(root)

    def _budget_update(self, old: Any, new: Any) -> None:
        if old.get("spec") != new.get("spec"):  # not the disruption controller's status counts
            self._budget(new)

    def _keep_set_histories(self, kcp: ClientFactory) -> None:
        """One history controller per set kind (reconcile_history.py), over one ControllerRevision informer."""
        revisions = self._informer(*CONTROLLER_REVISIONS, namespaced=True)
        revisions.add_indexers({SET_OWNER_INDEX: set_owner_index})
        histories: dict[str, Controller[ObjectKey]] = {}
        for kind, (api_version, plural) in SETS.items():
            sets = self._informer(api_version, plural, namespaced=True)
            history = SetHistory(kcp, kind=kind, sets=sets.indexer, revisions=revisions.indexer)
            controller = histories[kind] = self._controller(f"{kind.lower()}-history", history.reconcile)
            def synced(sets: AcrossIdentities = sets) -> bool:
                return bool(sets.has_synced and revisions.has_synced)

            self.running.append((controller, synced))

            def set_changed(obj: Any, controller: Controller[ObjectKey] = controller) -> None:
                key = key_for(deleted_object(obj))
                if self._mine(key.cluster):
                    controller.enqueue(key)

            _on_change(sets, set_changed, f"splitter-{plural}")

        def revision_changed(obj: Any) -> None:
            obj = deleted_object(obj)
            owner, key = set_of(obj), key_for(obj)
            if owner is not None and self._mine(key.cluster):
                histories[owner[0]].enqueue(ObjectKey(key.cluster, key.namespace, owner[1]))

        _on_change(revisions, revision_changed, "splitter-controllerrevisions")

    def _keep_remote_endpoints(self, kcp: ClientFactory) -> None:
        """The `endpoints` controller (reconcile_endpoints.py) over Services, mirrored pods and our slices."""
        services = self._informer("v1", "services", namespaced=True)
        pods = self._informer("v1", "pods", namespaced=True)
        slices = self._informer(*ENDPOINT_SLICES, namespaced=True)
        slices.add_indexers({SLICE_OWNER_INDEX: slice_owner_index})
        remote = RemoteEndpoints(kcp, services=services.indexer, pods=pods.indexer, slices=slices.indexer)
        self.endpoints = endpoints = self._controller("endpoints", remote.reconcile)
        self.running.append((endpoints, lambda: services.has_synced and pods.has_synced and slices.has_synced))

        def service_changed(obj: Any) -> None:
            key = key_for(deleted_object(obj))
            if self._mine(key.cluster):
                endpoints.enqueue(key)

        def selecting(*found: Any) -> None:
            for pod in found:
                key = key_for(pod)
                if not self._mine(key.cluster):
                    continue
                for service in services.indexer.by_index(CLUSTER_NAMESPACE_INDEX,
                                                         cluster_namespace_value(key.cluster, key.namespace)):
                    if selects_pods(service) and selected(service, pod):
                        endpoints.enqueue(key_for(service))

        def pod_changed(old: Any, new: Any) -> None:
            if endpoint_facts(old) != endpoint_facts(new):
                selecting(old, new)

        def slice_changed(obj: Any) -> None:
            obj = deleted_object(obj)
            key = key_for(obj)
            name = ((obj.get("metadata") or {}).get("labels") or {}).get(SERVICE_NAME_LABEL)
            if slice_owner_index(obj) and name and self._mine(key.cluster):
                endpoints.enqueue(ObjectKey(key.cluster, key.namespace, str(name)))

        _on_change(services, service_changed, "splitter-endpoints-services")
        pods.add_handler(on_add=selecting, on_update=pod_changed,
                         on_delete=lambda pod: selecting(deleted_object(pod)), name="splitter-endpoints-pods")
        slices.add_handler(on_add=slice_changed, on_update=lambda old, new: slice_changed(new),
                           on_delete=slice_changed, name="splitter-endpoints-slices")

    def _place_classes(self, kcp: ClientFactory) -> None:
        """The `classes` controller, keyed by logical cluster: queued when a class changes, or an object
        naming classes is placed, moved or changes the classes it names."""
        classes = {kind: self._informer(api_version, plural, namespaced=False)
                   for kind, (api_version, plural) in CLASS_KINDS.items()}
        referrers = {kind: self._informer(api_version, plural, namespaced=True)
                     for kind, (api_version, plural) in REFERRER_KINDS.items()}
        placer = ClassPlacer(kcp, classes=classes, referrers=referrers)
        self.classes = classes_controller = self._controller("classes", placer.reconcile)
        self.running.append((classes_controller, lambda: self.deployments.has_synced))

        def queue(obj: Any) -> None:
            cluster = key_for(deleted_object(obj)).cluster
            if self._mine(cluster):
                classes_controller.enqueue(ObjectKey(cluster, "", ""))

        for informer in classes.values():
            _on_change(informer, queue, "splitter-classes")
        for kind, informer in referrers.items():
            index = classes_index(kind)
            informer.add_indexers({CLASSES_INDEX: index})

            def naming(obj: Any, index: Callable[[Any], list[str]] = index) -> None:
                if index(deleted_object(obj)):
                    queue(obj)

            def changed(old: Any, new: Any, index: Callable[[Any], list[str]] = index) -> None:
                if index(old) != index(new):
                    queue(new)

            informer.add_handler(on_add=naming, on_update=changed, on_delete=naming,
                                 name=f"splitter-classes-{kind.lower()}")

    def _informer(self, api_version: str, plural: str, *, namespaced: bool) -> AcrossIdentities:
        """The type over every workspace: those serving it from a CRD, and those binding it (any identity)."""
        return self.identities.informer(api_version, plural, namespaced=namespaced)

    def _controller(self, name: str, reconcile: Reconciler[ObjectKey]) -> Controller[ObjectKey]:
        return Controller(name, reconcile, workers=self.settings.workers, registry=self.registry,
                          component=COMPONENT)

    @property
    def ready(self) -> bool:
        """Readiness: Deployments and SyncTargets listed, or not served yet (a fresh kcp serves Deployments
        only once a SyncTarget imports them; the informer follows them until then)."""
        return bool(self.deployments.synced_or_unserved and self.targets.synced_or_unserved)

    def _mine(self, cluster: str) -> bool:
        return bool(owns(cluster, self.settings.shard_index, self.settings.shards))

    def _namespace_key(self, cluster: str, namespace: str) -> None:
        key = ObjectKey(cluster, "", namespace)
        for controller in (self.dependencies, self.namespaces):
            if controller is not None:
                controller.enqueue(key)

    def _in_namespace(self, obj: Any) -> None:
        key = key_for(deleted_object(obj))
        if self._mine(key.cluster):
            self._namespace_key(key.cluster, key.namespace)

    def _namespace_object(self, obj: Any) -> None:
        """Added or deleted: its scheduling, and the Placements of its workspace (the namespaces they govern)."""
        key = key_for(deleted_object(obj))
        if self._mine(key.cluster) and self.namespaces is not None:
            self.namespaces.enqueue(ObjectKey(key.cluster, "", key.name))
            self._placements_in(key.cluster)

    def _namespace_update(self, old: Any, new: Any) -> None:
        key = key_for(new)
        if not self._mine(key.cluster) or self.namespaces is None:
            return
        self.namespaces.enqueue(ObjectKey(key.cluster, "", key.name))
        if ((old.get("metadata") or {}).get("labels") or {}) != ((new.get("metadata") or {}).get("labels") or {}):
            self._daemonsets_in(key.cluster, key.name)  # opted out of scheduling, or back in
            if self.dependencies is not None:  # its target: whether its Services follow it or their callers
                self.dependencies.enqueue(ObjectKey(key.cluster, "", key.name))
            self._placements_in(key.cluster)
            if placed_keys(old) != placed_keys(new):
                self._placed_namespace(key.cluster, key.name)

    def _placements_in(self, cluster: str) -> None:
        if self.placements is not None:
            for placement in self.placement_informer.indexer.index_keys(CLUSTER_INDEX, cluster):
                self.placements.enqueue(placement)

    def _deployment(self, obj: Any) -> None:
        """Added or deleted: its root, and its namespace's dependencies if it uses any."""
        obj = deleted_object(obj)
        key = key_for(obj)
        if not self._mine(key.cluster):
            return
        if self.dependencies is not None and uses_index(obj):
            self.dependencies.enqueue(ObjectKey(key.cluster, "", key.namespace))
        if self.namespaces is not None and shares_of(obj):  # a namespace leaving a target waits for its shares
            self.namespaces.enqueue(ObjectKey(key.cluster, "", key.namespace))
        self._root_of(key, obj)

    def _deployment_update(self, old: Any, new: Any) -> None:
        key = key_for(new)
        if not self._mine(key.cluster):
            return
        moved = _running_on(old) != _running_on(new)  # what it uses follows it; a namespace leaving waits for it
        if self.dependencies is not None and (moved or uses_index(old) != uses_index(new)):
            self.dependencies.enqueue(ObjectKey(key.cluster, "", key.namespace))
        if self.namespaces is not None and (moved or shares_of(old).keys() != shares_of(new).keys()):
            self.namespaces.enqueue(ObjectKey(key.cluster, "", key.namespace))
        self._root_of(key, new)

    def _root_of(self, key: ObjectKey, obj: Any) -> None:
        if is_root(obj):
            self.controller.enqueue(key)
            self.revisions.enqueue(key)

    def _replica_set(self, obj: Any) -> None:
        """A ReplicaSet a Deployment controls: that Deployment's revisions."""
        obj = deleted_object(obj)
        ref = controller_of(obj)
        key = key_for(obj)
        if ref is not None and self._mine(key.cluster):
            self.revisions.enqueue(ObjectKey(key.cluster, key.namespace, str(ref.get("name"))))

    def _target_update(self, old: Any, new: Any) -> None:
        if placement_facts(old) != placement_facts(new):
            self._target(new)
        elif ((old.get("metadata") or {}).get("labels")) != ((new.get("metadata") or {}).get("labels")):
            self._placements_using(key_for(new).cluster)  # the Locations that select it may change

    def _target(self, obj: Any) -> None:
        cluster = key_for(deleted_object(obj)).cluster
        if self.placements is not None:
            self._placements_using(cluster)
            self._placed_on(deleted_object(obj))
        if not self._mine(cluster):
            return
        cache = self.deployments.indexer
        for key in cache.index_keys(CLUSTER_INDEX, cluster):  # unsorted: sorting thousands of keys buys nothing
            deployment = cache.get(key)
            if deployment is not None and is_root(deployment):
                self.controller.enqueue(key)
        self._daemonsets_in(cluster)
        if self.namespaces is not None:
            for namespace in self.namespace_informer.indexer.by_index(CLUSTER_INDEX, cluster):
                self.namespaces.enqueue(ObjectKey(cluster, "", namespace["metadata"]["name"]))

    async def run(self) -> None:
        self.factory.start()
        self.splitter.events.start()
        try:
            async with asyncio.TaskGroup() as group:
                for controller, synced in self.running:
                    group.create_task(controller.start(wait_for=[synced]))
        finally:
            await self.splitter.events.stop()
            await self.factory.stop()
