"""The simulated control plane's view of the server's shared informers.

The control plane lives inside the API server, so it uses the server's own in-process informer of each
resource (one per resource, fed by the watch cache, shared with the garbage collector and the
namespace controllers): 10,000 pods are decoded and held once for every consumer. This wraps one such
informer for the sim's controllers: its indexes (kcpcommon IndexFuncs, under a `sim:` prefix so they
cannot collide with another consumer's) see only the simulated logical clusters' objects, and its
handlers get `(old, new)` and run inline, as the cache changes (they only look and enqueue).

Objects are frozen and shared with every consumer: copy what you change (`copy_obj`). Each knows its key
(`kcpcommon.keys.Located`), which is where `cluster_of` finds its logical cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kcp_apiserver.embedding import WatchCacheInformer
from kcp_sim_cluster.controlplane.objects import Obj
from kcpcommon import keys
from kcpcommon.keys import ObjectKey
from kcpcommon.sharedcache import DeletedFinalStateUnknown, HandlerRegistration, deleted_object

# (old, new): old None on add, new None on delete
Handler = Callable[[Obj | None, Obj | None], None]
IndexFunc = Callable[[Obj], Iterable[str]]

INDEX_PREFIX = "sim:"


def cluster_of(obj: Obj) -> str:
    """The logical cluster of an object the sim got from an informer or a write (`Located`: the sim's
    objects carry no `kcp.io/cluster`, as a physical cluster's do not)."""
    return keys.cluster_of(obj) or ""


def key_of(obj: Obj) -> ObjectKey:
    meta = obj["metadata"]
    return ObjectKey(cluster_of(obj), meta.get("namespace", ""), meta["name"])


def controller_uid(obj: Obj) -> str:
    """The uid of the object's controlling owner ("" when it has none)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid", ""))
    return ""


class Informer:
    """The simulated clusters' objects of one resource: indexes and `(old, new)` handlers on a shared informer."""

    def __init__(self, shared: WatchCacheInformer, clusters: frozenset[str]) -> None:
        self.shared = shared
        self.clusters = clusters  # empty: every logical cluster
        self.registrations: list[HandlerRegistration] = []

    def simulated(self, obj: Obj) -> bool:
        return not self.clusters or cluster_of(obj) in self.clusters

    # -- wiring ------------------------------------------------------------------------------

    def add_handler(self, handler: Handler) -> None:
        def on_add(obj: Obj) -> None:
            if self.simulated(obj):
                handler(None, obj)

        def on_update(old: Obj, new: Obj) -> None:
            if self.simulated(new):
                handler(old, new)

        def on_delete(obj: Obj | DeletedFinalStateUnknown) -> None:
            final = deleted_object(obj)
            if self.simulated(final):
                handler(final, None)

        self.registrations.append(self.shared.add_handler(on_add=on_add, on_update=on_update, on_delete=on_delete,
                                                          name=f"sim:{getattr(handler, '__qualname__', 'handler')}",
                                                          inline=True))

    def add_index(self, name: str, func: IndexFunc) -> None:
        """An index over the simulated clusters' objects (a name taken already keeps its first function)."""

        def index(obj: Obj) -> Iterable[str]:
            return func(obj) if self.simulated(obj) else ()

        self.shared.add_indexers({INDEX_PREFIX + name: index}, skip_existing=True)

    async def wait_for_sync(self) -> None:
        """Until the first list is cached and every handler has seen it."""
        await self.shared.wait_for_sync()
        for registration in self.registrations:
            await registration.wait_for_sync()

    def stop(self) -> None:
        """Stop the handlers (the informer is the server's and keeps running)."""
        for registration in self.registrations:
            registration.remove()
        self.registrations.clear()

    # -- reads -------------------------------------------------------------------------------

    def get(self, key: ObjectKey) -> Obj | None:
        return self.shared.indexer.get(key)

    def by_index(self, name: str, value: str) -> list[Obj]:
        """In no particular order (the indexer's `by_index` sorts: a thousand pods of one owner, on every
        reconcile, is too many comparisons); callers that care sort by what they care about."""
        get = self.shared.indexer.get
        return [obj for key in self.shared.indexer.index_keys(INDEX_PREFIX + name, value)
                if (obj := get(key)) is not None]

    def keys_by_index(self, name: str, value: str) -> list[ObjectKey]:
        return list(self.shared.indexer.index_keys(INDEX_PREFIX + name, value))

    def in_cluster(self, cluster: str) -> list[Obj]:
        """By key (nodes in name order: the scheduler's ties go the same way every run)."""
        return self.shared.indexer.by_index(INDEX_PREFIX + "cluster", cluster)


def new_informer(shared: WatchCacheInformer, namespaced: bool, clusters: frozenset[str]) -> Informer:
    """An informer with the indexes every controller uses: by logical cluster, namespace and controller."""
    informer = Informer(shared, clusters)
    informer.add_index("cluster", lambda o: [cluster_of(o)])
    if namespaced:
        informer.add_index("namespace", lambda o: [f"{cluster_of(o)}/{o['metadata'].get('namespace', '')}"])
        informer.add_index("owner", lambda o: [uid] if (uid := controller_uid(o)) else [])
        informer.add_index("orphan", lambda o: [] if controller_uid(o) else
                           [index_value(cluster_of(o), o["metadata"].get("namespace", ""))])
    return informer


def index_value(cluster: str, namespace: str) -> str:
    """The `namespace` index's value for a namespace of a logical cluster."""
    return f"{cluster}/{namespace}"
