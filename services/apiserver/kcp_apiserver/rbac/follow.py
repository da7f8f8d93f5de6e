"""Keeps the PolicyIndex current: one follower per RBAC watch cache, in every replica, before serving.

Also hands the registry the shared default ClusterRoles and ClusterRoleBindings, so every logical
cluster shows them (registry/shared.py says how reads and writes treat them).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable
from typing import Any

from kcp_apiserver.rbac.policy import PolicyIndex
from kcp_apiserver.registry.builtin.rbac import RESOURCES
from kcp_apiserver.registry.catalog import WatchCaches
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.watchcache import Follower, Watcher
from kcpcommon.tasks import cancel_and_wait, spawn, supervise

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
    """A Runnable: start() returns once the index holds every RBAC object of every logical cluster."""

    def __init__(self, index: PolicyIndex, storage: Storage, caches: WatchCaches, registry: Registry) -> None:
        self.index = index
        self.storage = storage
        self.caches = caches
        self.registry = registry
        self._tasks: list[asyncio.Task[None]] = []

    def _observe(self, kind: str) -> Callable[[Obj, bool], None]:
        index = self.index
        if kind == "Role":
            return index.observe_role
        return index.observe_cluster_role if kind == "ClusterRole" else index.observe_binding

    async def start(self) -> None:
        for res in RESOURCES:
            if res.kind in ("ClusterRole", "ClusterRoleBinding"):
                self.registry.shared[res.prefix] = SharedDefaults(self.index, res.kind)
            follower = Follower(self.storage, await self.caches.get(res), observe=self._observe(res.kind),
                                reset=functools.partial(self.index.reset, res.kind), name=f"rbac:{res.plural}")
            first = await follower.resync()
            self._tasks.append(spawn(supervise(self._follow(follower, first), name=f"rbac:{res.plural}"),
                                     name=f"rbac:{res.plural}"))

    @staticmethod
    def _follow(follower: Follower, first: Watcher) -> Callable[[], Any]:
        pending = [first]

        async def follow() -> None:
            await follower.follow(pending.pop() if pending else await follower.resync())

        return follow

    async def stop(self) -> None:
        await cancel_and_wait(*self._tasks)
