"""Namespace lifecycle: admission (no content in missing or terminating namespaces)
and the controller that empties a terminating namespace and then removes it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

import structlog
from kcpcommon.keys import CLUSTER_ANNOTATION
from kcpcommon.tasks import cancel_and_wait, spawn

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.builtin import NAMESPACE
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import KeyNotFound, Storage, StorageError
from kcp_apiserver.storage.keys import object_key, scope_prefix
from kcp_apiserver.storage.watchcache import Follower, WatchCache

log = structlog.get_logger("namespaces")

FINALIZER = "kubernetes"
RETRY_SECONDS = 1.0


class NamespaceLifecycle:
    """Tracks every namespace's phase from the watch cache; finalizes terminating ones."""

    def __init__(self, storage: Storage, cache: WatchCache,
                 namespaced_resources: Callable[[str], Iterable[Resource]]) -> None:
        self.storage = storage
        self.cache = cache
        self.namespaced_resources = namespaced_resources
        self.registry: Registry | None = None
        self.terminating: dict[tuple[str, str], bool] = {}  # (cluster, ns) -> is terminating
        self.queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self.queued: set[tuple[str, str]] = set()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self, *, finalize: bool = True) -> None:
        follower = Follower(self.storage, self.cache, observe=self._observe, reset=self.terminating.clear,
                            name="namespaces")
        watcher = await follower.resync()
        self._tasks = [spawn(follower.follow(watcher), name="namespaces:follow")]
        if finalize:
            self._tasks.append(spawn(self._work(), name="namespaces:finalize"))

    async def stop(self) -> None:
        await cancel_and_wait(*self._tasks)

    def _observe(self, ns: Obj, deleted: bool) -> None:
        meta = ns["metadata"]
        key = (meta.get("annotations", {}).get(CLUSTER_ANNOTATION, ""), meta["name"])
        if deleted:
            self.terminating.pop(key, None)
            return
        terminating = bool(meta.get("deletionTimestamp"))
        self.terminating[key] = terminating
        if terminating:
            self.enqueue(key)

    def enqueue(self, key: tuple[str, str]) -> None:
        if key not in self.queued:
            self.queued.add(key)
            self.queue.put_nowait(key)

    async def _work(self) -> None:
        while True:
            key = await self.queue.get()
            self.queued.discard(key)
            try:
                done = await self.finalize(*key)
            except (st.APIError, StorageError) as exc:
                log.warning("namespace finalization failed; retrying", cluster=key[0], namespace=key[1],
                            error=str(exc))
                done = False
            if not done:
                asyncio.get_running_loop().call_later(RETRY_SECONDS, self.enqueue, key)

    async def finalize(self, cluster: str, namespace: str) -> bool:
        """Delete the namespace's content; remove the namespace once empty. True when finished."""
        assert self.registry is not None
        remaining = 0
        for res in self.namespaced_resources(cluster):
            await self.registry.delete_collection(res, cluster, namespace)
            remaining += await self.storage.count(scope_prefix(res.prefix, cluster, namespace))
        if remaining:
            return False
        key = object_key(NAMESPACE.prefix, cluster, "", namespace)

        async def drop_finalizer(current):  # type: ignore[no-untyped-def]
            finalizers = (current.obj.get("spec") or {}).get("finalizers") or []
            if FINALIZER not in finalizers:
                return None
            updated = dict(current.obj)
            updated["spec"] = {**current.obj.get("spec", {}), "finalizers": [f for f in finalizers if f != FINALIZER]}
            return updated

        try:
            current = await self.storage.guaranteed_update(key, drop_finalizer)
            if not current.obj["metadata"].get("finalizers") and not current.obj["spec"].get("finalizers"):
                await self.storage.delete(key, current.mod_revision)
        except KeyNotFound:
            return True
        return True

    async def admit(self, res: Resource, cluster: str, namespace: str, obj: Obj, old: Obj | None) -> None:
        """Refuse new content in a namespace that is missing or terminating."""
        if not res.namespaced or old is not None:
            return
        terminating = self.terminating.get((cluster, namespace))
        if terminating is None:
            try:
                stored = await self.storage.get(object_key(NAMESPACE.prefix, cluster, "", namespace))
                terminating = bool(stored.obj["metadata"].get("deletionTimestamp"))
            except KeyNotFound:
                raise st.not_found("namespaces", namespace) from None
            except StorageError as exc:
                raise st.unavailable() from exc
        if terminating:
            name = obj["metadata"].get("name", "")
            raise st.APIError(403, "Forbidden",
                              f'{res.group_resource} "{name}" is forbidden: unable to create new content in '
                              f"namespace {namespace} because it is being terminated",
                              {"name": name, "kind": res.plural, "group": res.group,
                               "causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                           "message": f"namespace {namespace} is being terminated"}]})
