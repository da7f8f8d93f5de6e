"""The garbage collector: follows every served resource of every logical cluster into one graph and
reconciles what the graph flags (kube's garbage collector, per logical cluster).

Wiring only: which prefixes are followed (every built-in, and each custom resource as soon as its CRD
is established), the work queue and its workers (kcpcommon's Controller), and supervision: a loop that
fails is logged and started again, so the collector never stops silently. What to do with an object
is `gc_reconcile`'s business; who owns whom is `gc_graph`'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.apiextensions.resources import is_established
from kcp_apiserver.apiextensions.servable import unservable
from kcp_apiserver.controllers.gc_graph import CLUSTER_ANNOTATION, Graph, ObjectRef
from kcp_apiserver.controllers.gc_reconcile import Collector
from kcp_apiserver.registry.catalog import Catalog, WatchCaches
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.watchcache import DELETED, Follower, WatchCache
from kcpcommon.backoff import Backoff
from kcpcommon.controller import Controller
from kcpcommon.tasks import cancel_and_wait, spawn

log = structlog.get_logger("garbagecollector")

NAME = "garbagecollector"
WORKERS = 4


async def supervise(name: str, run: Callable[[], Awaitable[Any]], *, backoff: Backoff | None = None) -> None:
    """Run `run` forever: a failure (or an unexpected return) is logged and it starts again after a backoff."""
    backoff = backoff or Backoff(initial=0.1, cap=10.0)
    while True:
        try:
            await run()
            log.error("loop ended unexpectedly; restarting", loop=name)
        except asyncio.CancelledError:
            raise
        except Exception:  # a collector that stops silently is worse than one that retries
            log.exception("loop failed; restarting", loop=name)
        await asyncio.sleep(backoff.next())


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
    """Owns the graph, the followers and the workers."""

    def __init__(self, storage: Storage, caches: WatchCaches, catalog: Catalog, registry: Registry, *,
                 workers: int = WORKERS, metrics: CollectorRegistry | None = None) -> None:
        self.storage = storage
        self.caches = caches
        self.catalog = catalog
        self.graph = Graph()
        self.controller: Controller[ObjectRef] = Controller(NAME, self._reconcile, workers=workers,
                                                            registry=metrics, component="kcp_apiserver")
        # custom kinds seen in CRDs, kept after the CRD goes: its objects' dependents still need collecting
        self.custom_kinds: dict[tuple[str, str, str], Resource] = {}  # (cluster, group, kind) -> resource
        self.collector = Collector(storage, registry, catalog, self.graph, synced=self.synced,
                                   enqueue=self.controller.enqueue, known_kinds=self.custom_kinds)
        self._followed: dict[str, asyncio.Task[None]] = {}  # prefix -> its supervised follower
        self._synced: set[str] = set()  # prefixes whose current list is fully in the graph
        self._builtins = {r.prefix: r for r in catalog.builtins}
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = False

    async def start(self) -> None:
        """Start following and working; returns at once (the workers wait for the built-ins' first lists)."""
        for res in self._builtins.values():
            self.follow(res)
        self._tasks.append(spawn(supervise(f"{NAME}:workers", lambda: self.controller.start(
            wait_for=[self.builtins_synced])), name=f"{NAME}:workers"))

    async def stop(self) -> None:
        self._stopped = True  # a worker finishing its key must not start new followers
        await cancel_and_wait(*self._tasks, *self._followed.values())
        self._tasks.clear()
        self._followed.clear()

    def builtins_synced(self) -> bool:
        return self._synced.issuperset(self._builtins)

    def synced(self, cluster: str) -> bool:
        """Is every resource this logical cluster serves in the graph? (Starts following any that is not.)"""
        missing = [r for r in self.catalog.for_cluster(cluster) if r.prefix not in self._synced]
        for res in missing:
            self.follow(res)
        return not missing

    def follow(self, res: Resource) -> None:
        if res.prefix not in self._followed and not self._stopped:
            self._followed[res.prefix] = spawn(supervise(f"{NAME}:follow:{res.prefix}", lambda: self._follow(res)),
                                               name=f"{NAME}:follow:{res.prefix}")

    async def _reconcile(self, ref: ObjectRef) -> Any:
        return await self.collector.reconcile(ref)

    async def _follow(self, res: Resource) -> None:
        """List the prefix into the graph, then apply every change; list again when the cache resets."""
        cache: WatchCache = await self.caches.get(res)
        prefix = res.prefix

        def reset() -> None:
            self._synced.discard(prefix)
            self.graph.begin_resync(prefix)

        follower = Follower(self.storage, cache, observe=lambda obj, deleted: self._observe(prefix, obj, deleted),
                            reset=reset, name=f"{NAME}:{prefix}")
        self._synced.discard(prefix)
        while True:
            watcher = await follower.resync()
            try:
                self._enqueue(self.graph.end_resync(prefix))
                self._synced.add(prefix)
                while (item := await watcher.queue.get()) is not None:
                    type_, event = item
                    self._observe(prefix, event.obj, type_ == DELETED)
                    event.compact()  # the cache's window must not keep what this follower decoded
            finally:
                self._synced.discard(prefix)
                watcher.close()

    def _observe(self, prefix: str, obj: Obj, deleted: bool) -> None:
        if prefix == CRD.prefix:  # before the graph: a CR's dependents queued by it may need the kind
            custom = _custom_resource(obj, self.catalog.builtins)
            if custom is not None:
                cluster = (obj["metadata"].get("annotations") or {}).get(CLUSTER_ANNOTATION, "")
                self.custom_kinds[(cluster, custom.group, custom.kind)] = custom
                if is_established(obj):
                    self.follow(custom)
        self._enqueue(self.graph.observe(prefix, obj, deleted))

    def _enqueue(self, refs: set[ObjectRef]) -> None:
        for ref in refs:
            self.controller.enqueue(ref)
