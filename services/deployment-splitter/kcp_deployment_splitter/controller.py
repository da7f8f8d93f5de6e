"""Wiring: informers over every logical cluster, the enqueue rules, the controller.

A root is queued when it changes, when one of its children changes (by the root label) and, for
every root of a logical cluster, when a SyncTarget of that logical cluster changes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Controller
from kcpcommon.informer import deleted_object
from kcpcommon.informer_factory import SharedInformerFactory
from kcpcommon.keys import WILDCARD_CLUSTER, ObjectKey, key_for
from kcpcommon.sharding import owns
from kcpcommon.store import CLUSTER_INDEX

from .capacity import CapacityTracker
from .dependencies import KINDS
from .expectations import Expectations
from .names import COMPONENT, DEPLOYMENTS, ROOT_LABEL, SYNC_TARGETS
from .reconcile import ROOT_INDEX, Splitter, is_root, root_index_value
from .reconcile_dependencies import DependencyPlacer
from .settings import SplitterSettings

EXPECTATIONS_TTL = 15.0  # seconds a write may take to show in the cache before the splitter decides anyway


def _root_index(obj: Mapping[str, Any]) -> list[str]:
    root = ((obj.get("metadata") or {}).get("labels") or {}).get(ROOT_LABEL)
    if not root or is_root(obj):
        return []
    key = key_for(obj)
    return [root_index_value(key.cluster, key.namespace, root)]


class SplitterController:
    """The informers, the Splitter and the Controller of one elected replica."""

    def __init__(self, kcp: ClientFactory, settings: SplitterSettings, registry: CollectorRegistry) -> None:
        self.settings = settings
        self.factory = SharedInformerFactory(kcp)
        self.deployments = self.factory.informer(cluster=WILDCARD_CLUSTER, api_version=DEPLOYMENTS[0],
                                                 plural=DEPLOYMENTS[1], namespaced=True)
        self.deployments.add_indexers({ROOT_INDEX: _root_index})
        self.targets = self.factory.informer(cluster=WILDCARD_CLUSTER, api_version=SYNC_TARGETS[0],
                                             plural=SYNC_TARGETS[1], namespaced=False)
        tracker = CapacityTracker(grace_period=settings.capacity_grace_period,
                                  retry_period=settings.capacity_retry_period, clock=time.monotonic)
        self.splitter = Splitter(kcp, deployments=self.deployments.indexer, targets=self.targets.indexer,
                                 grace_period=settings.grace_period, capacity=tracker,
                                 expectations=Expectations(ttl=EXPECTATIONS_TTL, clock=time.monotonic),
                                 registry=registry)
        self.controller: Controller[ObjectKey] = Controller("deployment-splitter", self.splitter.reconcile,
                                                            workers=settings.workers, registry=registry,
                                                            component=COMPONENT)
        self.deployments.add_handler(on_add=self._deployment, on_update=lambda old, new: self._deployment(new),
                                     on_delete=self._deployment, name="splitter-deployments")
        self.targets.add_handler(on_add=self._target, on_update=lambda old, new: self._target(new),
                                 on_delete=self._target, name="splitter-synctargets")
        self.dependencies: Controller[ObjectKey] | None = None
        if settings.place_dependencies:
            objects = {kind: self.factory.informer(cluster=WILDCARD_CLUSTER, api_version=api_version, plural=plural,
                                                   namespaced=True) for kind, (api_version, plural) in KINDS.items()}
            placer = DependencyPlacer(kcp, deployments=self.deployments.indexer, objects=objects)
            self.dependencies = Controller("dependencies", placer.reconcile, workers=settings.workers,
                                           registry=registry, component=COMPONENT)
            self._built_in = [objects[kind] for kind in ("ConfigMap", "Secret", "ServiceAccount")]
            for kind, informer in objects.items():
                informer.add_handler(on_add=self._dependency, on_update=lambda old, new: self._dependency(new),
                                     on_delete=self._dependency, name=f"splitter-{kind.lower()}")

    @property
    def has_synced(self) -> bool:
        return self.deployments.has_synced and self.targets.has_synced

    def _mine(self, cluster: str) -> bool:
        return owns(cluster, self.settings.shard_index, self.settings.shards)

    def _namespace(self, key: ObjectKey) -> None:
        if self.dependencies is not None:
            self.dependencies.enqueue(ObjectKey(key.cluster, "", key.namespace))

    def _dependency(self, obj: Any) -> None:
        key = key_for(deleted_object(obj))
        if self._mine(key.cluster):
            self._namespace(key)

    def _deployment(self, obj: Any) -> None:
        obj = deleted_object(obj)
        key = key_for(obj)
        if not self._mine(key.cluster):
            return
        self._namespace(key)
        if is_root(obj):
            self.controller.enqueue(key)
            return
        root = ((obj.get("metadata") or {}).get("labels") or {}).get(ROOT_LABEL)
        if root:
            self.controller.enqueue(ObjectKey(key.cluster, key.namespace, root))

    def _target(self, obj: Any) -> None:
        cluster = key_for(deleted_object(obj)).cluster
        if not self._mine(cluster):
            return
        for deployment in self.deployments.indexer.by_index(CLUSTER_INDEX, cluster):
            if is_root(deployment):
                self.controller.enqueue(key_for(deployment))

    async def run(self) -> None:
        self.factory.start()
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self.controller.start(wait_for=[lambda: self.has_synced]))
                if self.dependencies is not None:
                    group.create_task(self.dependencies.start(wait_for=[
                        lambda: self.deployments.has_synced and all(i.has_synced for i in self._built_in)]))
        finally:
            await self.factory.stop()
