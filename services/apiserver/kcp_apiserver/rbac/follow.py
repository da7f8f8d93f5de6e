"""Keeps the PolicyIndex current: a handler on each RBAC informer, in every replica, before serving.

Also hands the registry the shared default ClusterRoles and ClusterRoleBindings, so every logical
cluster shows them (registry/shared.py says how reads and writes treat them), created when that
logical cluster was: at its `default` namespace's creationTimestamp (both are written when the cluster is
born, and `default` may not be deleted), read from the namespace informer's memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kcp_apiserver.rbac.policy import PolicyIndex
from kcp_apiserver.registry.builtin import NAMESPACE
from kcp_apiserver.registry.builtin.rbac import RESOURCES
from kcp_apiserver.registry.informers import Informers, Observe, WatchCacheInformer, add_observer
from kcp_apiserver.registry.store import Registry, now_rfc3339
from kcp_apiserver.storage.keys import ObjectKey
from kcpcommon.sharedcache import HandlerRegistration

Obj = dict[str, Any]
BIRTH_NAMESPACE = "default"  # written with the logical cluster, never deleted: it dates the cluster


class ClusterBirth:
    """When a logical cluster was created; one not created yet (nothing written there) shows this server's
    start, so its defaults do not change age from one read to the next."""

    def __init__(self, namespaces: WatchCacheInformer) -> None:
        self.namespaces = namespaces
        self.fallback = now_rfc3339()
        # the last answer found: a list asks once per default object (~70 times) for one cluster, and a
        # cluster's birth never changes; one entry, so it costs nothing per logical cluster
        self._last: tuple[str, str] | None = None

    def __call__(self, cluster: str) -> str:
        if self._last is not None and self._last[0] == cluster:
            return self._last[1]
        ns = self.namespaces.indexer.get(ObjectKey(cluster, "", BIRTH_NAMESPACE))
        created = ns["metadata"].get("creationTimestamp") if ns is not None else None
        if not (isinstance(created, str) and created):
            return self.fallback
        self._last = (cluster, created)
        return created


class SharedDefaults:
    """The defaults of one kind, as the registry's SharedObjects."""

    def __init__(self, index: PolicyIndex, kind: str, created: Callable[[str], str]) -> None:
        self.index = index
        self.kind = kind
        self.created = created

    def get(self, cluster: str, name: str) -> Obj | None:
        return self.index.default_object(self.kind, cluster, name, created=self.created(cluster))

    def names(self) -> Iterable[str]:
        return self.index.default_names(self.kind)


class RBACFollowers:
    """A Runnable: handlers on the four RBAC informers; start() returns once the index holds every RBAC
    object of every logical cluster."""

    def __init__(self, index: PolicyIndex, informers: Informers, registry: Registry) -> None:
        self.index = index
        self.informers = informers
        self.registry = registry
        self._handlers: list[HandlerRegistration] = []

    def _observe(self, kind: str) -> Observe:
        index = self.index
        if kind == "Role":
            return index.observe_role
        return index.observe_cluster_role if kind == "ClusterRole" else index.observe_binding

    async def start(self) -> None:
        birth = ClusterBirth(await self.informers.get(NAMESPACE))
        for res in RESOURCES:
            if res.kind in ("ClusterRole", "ClusterRoleBinding"):
                self.registry.shared[res.prefix] = SharedDefaults(self.index, res.kind, birth)
            informer = await self.informers.get(res)
            self._handlers.append(add_observer(informer, self._observe(res.kind), name=f"rbac:{res.plural}"))
        for handler in self._handlers:
            await handler.wait_for_sync()
        await birth.namespaces.wait_for_sync()

    async def stop(self) -> None:
        for handler in self._handlers:
            handler.remove()
        self._handlers.clear()
