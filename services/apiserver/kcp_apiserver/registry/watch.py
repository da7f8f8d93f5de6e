"""Watch semantics, as kube's cacher has them: where a watch starts and what it sees first.

- Without `sendInitialEvents`, a watch from "" or "0" starts with the current state (as ADDED
  events) and then every change after it; from "N" it replays the cache's window after N, and a
  resourceVersion older than the window is 410 Gone (the client relists).
- With `sendInitialEvents=true` (a watch-list) the initial state is at least as new as the requested
  resourceVersion ("" = etcd's current revision), and its end is marked for a BOOKMARK annotated
  `k8s.io/initial-events-end`.

`prepare_watch` does every await (freshness checks, an etcd read when the cache is behind, waiting
for a future resourceVersion); `PreparedWatch.start` then emits the initial state and subscribes with
no await in between, so the initial state and the events after it join exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import ListResult, Registry, parse_resource_version
from kcp_apiserver.storage import watchframing
from kcp_apiserver.storage.watchcache import (
    ADDED,
    TOO_SLOW,
    Batch,
    Filter,
    Sink,
    TooOld,
    WatchCache,
    Watcher,
    WatchEvent,
)

# what the HTTP layer needs of the cache, so that it never reaches past the registry into storage
__all__ = ["ADDED", "TOO_SLOW", "Batch", "PreparedWatch", "WatchCache", "WatchEvent", "Watcher", "prepare_watch", "watchframing"]

Emit = Callable[[list[Obj], int], None]  # (initial objects, the revision they are at)


@dataclass
class PreparedWatch:
    registry: Registry
    res: Resource
    cache: WatchCache
    cluster: str | None
    namespace: str
    name: str
    matches: Filter | None
    initial: bool  # send the current state first
    after: int  # with no initial state: events after this revision
    listed: ListResult | None  # the initial state when the cache was not fresh enough to give it

    def start(self, emit: Emit, sink: Sink) -> Watcher:
        """Emit the initial state (if any), then subscribe right after it; 410 if the window moved on."""
        after = self.after
        if self.initial:
            listed = self.listed or self.registry.list_cached(self.res, self.cache, self.cluster, self.namespace,
                                                              matches=self.matches, name=self.name)
            after = listed.revision
            emit(listed.items, after)
        try:
            return self.cache.subscribe(cluster=self.cluster, namespace=self.namespace or None,
                                        name=self.name or None, matches=self.matches, after_revision=after,
                                        sink=sink)
        except TooOld as exc:
            raise st.gone(f"too old resource version: {exc.requested} ({exc.oldest})") from exc


async def prepare_watch(registry: Registry, res: Resource, cache: WatchCache, cluster: str | None, namespace: str,
                        *, name: str, matches: Filter | None, resource_version: str,
                        send_initial_events: bool | None) -> PreparedWatch:
    initial = resource_version in ("", "0") if send_initial_events is None else send_initial_events
    listed: ListResult | None = None
    after = 0
    if initial:
        fresh_for = resource_version if send_initial_events else "0"  # the legacy watch: the cache's state
        if not await registry.cache_can_serve(res, cache, cluster, namespace, fresh_for):
            listed = await registry.list(res, cluster, namespace, matches=matches, resource_version=fresh_for)
            if name:
                listed.items = [o for o in listed.items if o["metadata"]["name"] == name]
    elif resource_version == "0":
        after = cache.revision
    elif resource_version == "":
        after = await registry.current_revision(res)
    else:
        after = parse_resource_version(resource_version)
        if after > cache.revision:  # a watch from the future would silently skip what comes before it
            await registry.wait_for_revision(res, after)
    return PreparedWatch(registry, res, cache, cluster, namespace, name, matches, initial, after, listed)
