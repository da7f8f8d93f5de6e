"""Keeps the PolicyIndex current: a handler on each RBAC informer, in every replica, before serving.

Also hands the registry the shared default ClusterRoles and ClusterRoleBindings, so every logical
cluster shows them (registry/shared.py says how reads and writes treat them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kcp_apiserver.rbac.policy import PolicyIndex
from kcp_apiserver.registry.builtin.rbac import RESOURCES
from kcp_apiserver.registry.informers import Informers, Observe, add_observer
from kcp_apiserver.registry.store import Registry
from kcpcommon.sharedcache import HandlerRegistration

Obj = dict[str, Any]


class SharedDefaults:
    """The defaults of one kind, as the registry's SharedObjects."""

    def __init__(self, index: PolicyIndex, kind: str) -> None:
        self.index = index
        self.kind = kind

    def get(self, cluster: str, name: str) -> Obj | None:
        return self.index.default_object(self.kind, cluster, name)

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
        for res in RESOURCES:
            if res.kind in ("ClusterRole", "ClusterRoleBinding"):
                self.registry.shared[res.prefix] = SharedDefaults(self.index, res.kind)
            informer = await self.informers.get(res)
            self._handlers.append(add_observer(informer, self._observe(res.kind), name=f"rbac:{res.plural}"))
        for handler in self._handlers:
            await handler.wait_for_sync()

    async def stop(self) -> None:
        for handler in self._handlers:
            handler.remove()
        self._handlers.clear()
