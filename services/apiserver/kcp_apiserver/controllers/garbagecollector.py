"""The garbage collector: follows every served resource of every logical cluster into one graph and
reconciles what the graph flags (kube's garbage collector, per logical cluster).

Wiring only: which resources are followed (every built-in, and each custom resource as soon as its CRD
is established; a handler on each one's shared informer, which lists again and reports what vanished
after a watch-cache reset) and the work queue and its workers (kcpcommon's Controller, supervised: a
failure is logged and it starts again, so the collector never stops silently). What to do with an
object is `gc_reconcile`'s business; who owns whom is `gc_graph`'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.apiextensions.resources import is_established
from kcp_apiserver.apiextensions.servable import unservable
from kcp_apiserver.controllers.gc_graph import Graph, ObjectRef
from kcp_apiserver.controllers.gc_reconcile import Collector
from kcp_apiserver.registry.catalog import Catalog
from kcp_apiserver.registry.informers import Informers, add_observer
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import Storage
from kcpcommon.controller import Controller
from kcpcommon.keys import cluster_of
from kcpcommon.sharedcache import HandlerRegistration
from kcpcommon.tasks import cancel_and_wait, spawn, supervise

log = structlog.get_logger("garbagecollector")

NAME = "garbagecollector"
WORKERS = 4


def _custom_resource(crd: Obj, builtins: Iterable[Resource]) -> Resource | None:
    """Enough of a CRD's resource to follow its objects and find its owners (prefix and scope)."""
    if unservable(crd, builtins) is not None:
        return None  # never served: its keys, if it names any, may be another type's or the server's
    spec = crd.get("spec") or {}
    names = (crd.get("status") or {}).get("acceptedNames") or {}
    if not names.get("plural") or not names.get("kind") or not spec.get("group"):
        return None  # never served: nothing of it can exist
    return Resource(spec["group"], "", str(names["kind"]), names["plural"], "", spec.get("scope") == "Namespaced")


class GarbageCollector:
    """Owns the graph, the handlers that feed it and the workers."""

    def __init__(self, storage: Storage, informers: Informers, catalog: Catalog, registry: Registry, *,
                 workers: int = WORKERS, metrics: CollectorRegistry | None = None) -> None:
        self.storage = storage
        self.informers = informers
        self.catalog = catalog
        self.graph = Graph()
        self.controller: Controller[ObjectRef] = Controller(NAME, self._reconcile, workers=workers,
                                                            registry=metrics, component="kcp_apiserver")
        # custom kinds seen in CRDs, kept after the CRD goes: its objects' dependents still need collecting
        self.custom_kinds: dict[tuple[str, str, str], Resource] = {}  # (cluster, group, kind) -> resource
        self.collector = Collector(storage, registry, catalog, self.graph, synced=self.synced,
                                   enqueue=self.controller.enqueue, known_kinds=self.custom_kinds)
        self._following: dict[str, asyncio.Task[None]] = {}  # prefix -> adding its handler (awaits its cache)
        self._handlers: dict[str, HandlerRegistration] = {}  # prefix -> the handler feeding the graph
        self._builtins = {r.prefix: r for r in catalog.builtins}
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = False

    async def start(self) -> None:
        """Start following and working; returns at once (the workers wait for the built-ins' first lists)."""
        for res in self._builtins.values():
            self.follow(res)
        self._tasks.append(spawn(supervise(lambda: self.controller.start(wait_for=[self.builtins_synced]),
                                           name=f"{NAME}:workers"), name=f"{NAME}:workers"))

    async def stop(self) -> None:
        self._stopped = True  # a worker finishing its key must not start following more
        await cancel_and_wait(*self._tasks, *self._following.values())
        for handler in self._handlers.values():
            handler.remove()
        self._tasks.clear()
        self._following.clear()
        self._handlers.clear()

    def _synced(self, prefix: str) -> bool:
        handler = self._handlers.get(prefix)
        return handler is not None and handler.has_synced

    def builtins_synced(self) -> bool:
        return all(self._synced(prefix) for prefix in self._builtins)

    def synced(self, cluster: str) -> bool:
        """Is every resource this logical cluster serves in the graph? (Starts following any that is not.)"""
        missing = [r for r in self.catalog.for_cluster(cluster) if not self._synced(r.prefix)]
        for res in missing:
            self.follow(res)
        return not missing

    def follow(self, res: Resource) -> None:
        if res.prefix not in self._following and not self._stopped:
            self._following[res.prefix] = spawn(self._add_handler(res), name=f"{NAME}:follow:{res.prefix}")

    async def _add_handler(self, res: Resource) -> None:
        informer = await self.informers.get(res)
        prefix = res.prefix
        # inline: the graph's bookkeeping is a few dict operations per event, less than a queued handler's task hop
        self._handlers[prefix] = add_observer(informer, lambda obj, deleted: self._observe(prefix, obj, deleted),
                                              name=f"{NAME}:{prefix}", inline=True)

    async def _reconcile(self, ref: ObjectRef) -> Any:
        return await self.collector.reconcile(ref)

    def _observe(self, prefix: str, obj: Obj, deleted: bool) -> None:
        if prefix == CRD.prefix:  # before the graph: a CR's dependents queued by it may need the kind
            custom = _custom_resource(obj, self.catalog.builtins)
            if custom is not None:
                cluster = cluster_of(obj) or ""
                self.custom_kinds[(cluster, custom.group, custom.kind)] = custom
                if is_established(obj):
                    self.follow(custom)
        self._enqueue(self.graph.observe(prefix, obj, deleted))

    def _enqueue(self, refs: set[ObjectRef]) -> None:
        for ref in refs:
            self.controller.enqueue(ref)
