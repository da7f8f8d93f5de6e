"""NamespaceLifecycle, as kube's plugin: no new content in a namespace that is missing or
terminating, and the namespaces every cluster relies on cannot be deleted."""

from __future__ import annotations

import asyncio

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.admission import CREATE, DELETE, Attributes
from kcp_apiserver.registry.builtin import NAMESPACE
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.storage.etcd import KeyNotFound, Storage, StorageError
from kcp_apiserver.storage.keys import object_key
from kcp_apiserver.storage.watchcache import Follower, WatchCache
from kcpcommon.keys import cluster_of
from kcpcommon.tasks import cancel_and_wait, spawn, supervise

IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})


class NamespaceLifecycle:
    """Knows every namespace's phase from the watch cache (falling back to etcd for one it has not seen)."""

    def __init__(self, storage: Storage, cache: WatchCache) -> None:
        self.storage = storage
        self.cache = cache
        self.terminating: dict[tuple[str, str], bool] = {}  # (cluster, namespace) -> is terminating
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        follower = Follower(self.storage, self.cache, observe=self._observe, reset=self.terminating.clear,
                            name="admission:namespaces")
        first = await follower.resync()
        watchers = [first]

        async def follow() -> None:
            watcher = watchers.pop() if watchers else await follower.resync()
            await follower.follow(watcher)

        self._task = spawn(supervise(follow, name="admission:namespaces"), name="admission:namespaces")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)

    def _observe(self, ns: Obj, deleted: bool) -> None:
        meta = ns["metadata"]
        key = (cluster_of(ns) or "", meta["name"])
        if deleted:
            self.terminating.pop(key, None)
        else:
            self.terminating[key] = bool(meta.get("deletionTimestamp"))

    async def validate(self, attrs: Attributes) -> None:
        res = attrs.resource
        if attrs.operation == DELETE:
            if res.prefix == NAMESPACE.prefix and attrs.name in IMMORTAL_NAMESPACES:
                raise st.APIError(403, "Forbidden",
                                  f'namespaces "{attrs.name}" is forbidden: this namespace may not be deleted',
                                  {"name": attrs.name, "kind": "namespaces"})
            return
        if attrs.operation != CREATE or not res.namespaced:
            return
        terminating = self.terminating.get((attrs.cluster, attrs.namespace))
        if terminating is None:
            try:
                stored = await self.storage.get(object_key(NAMESPACE.prefix, attrs.cluster, "", attrs.namespace))
                terminating = bool(stored.obj["metadata"].get("deletionTimestamp"))
            except KeyNotFound:
                raise st.not_found("namespaces", attrs.namespace) from None
            except StorageError as exc:
                raise st.unavailable() from exc
        if terminating:
            name = attrs.name
            raise st.APIError(403, "Forbidden",
                              f'{res.group_resource} "{name}" is forbidden: unable to create new content in '
                              f"namespace {attrs.namespace} because it is being terminated",
                              {"name": name, "kind": res.plural, "group": res.group,
                               "causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                           "message": f"namespace {attrs.namespace} is being terminated"}]})
