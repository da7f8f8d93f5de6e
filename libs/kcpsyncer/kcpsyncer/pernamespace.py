"""A downstream cache fed one namespace at a time, for the types the syncer may not read cluster-wide.

In pull mode the syncer's ClusterRole grants no namespaced type (its token would reach every namespace of
the cluster, kube-system's Secrets included): the cluster controller grants them in each of the syncer's
own namespaces with a RoleBinding instead. A cluster-wide list of such a type is forbidden, so its cache
runs one reflector per namespace of the syncer's own (carrying its owner label and, when `own` is given,
passing it: named after its locator, as the controller checks before binding), started when the namespace
appears and stopped when it goes, and answers the engine as one informer would (get, by namespace,
handlers, synced). A namespace not bound yet keeps the type unsynced (its reflector retries the 403 with
backoff), so nothing is deleted downstream on the evidence of a cache that could not list; since that holds
back every key of the type, a namespace's reflector starts its backoff at 0.1 s rather than client-go's
0.8 s (the controller binds a new namespace within a few hundred milliseconds; the backoff still doubles).

Whether a type is readable cluster-wide is asked once, as `kubectl auth can-i` asks it
(SelfSubjectAccessReview); a cluster that cannot answer keeps the one cluster-wide watch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kcpcommon.dynamic import DynamicClient
from kcpcommon.errors import APIClientError
from kcpcommon.informer import DeletedFinalStateUnknown, Handler, SharedInformer, Transform, deleted_object
from kcpcommon.keys import ObjectKey
from kcpcommon.reflector import ReflectorOptions
from kcpcommon.store import NAMESPACE_INDEX
from kcpcommon.tasks import cancel_and_wait, spawn

from .discovery import APIType
from .objects import Obj, meta

REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
UNTIL_BOUND = ReflectorOptions(backoff_initial=0.1)  # a new namespace's first lists are refused until bound


async def readable_cluster_wide(client: DynamicClient, typ: APIType) -> bool:
    """Whether this identity may list and watch `typ` in every namespace."""
    group = typ.api_version.rpartition("/")[0]

    async def allowed(verb: str) -> bool:
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": {"verb": verb, "group": group, "resource": typ.plural}}}
        try:
            answer = await client.request("POST", REVIEWS, body=review)
        except APIClientError:
            return True  # no reviews served: watch as before, and let a refusal show in the reflector's log
        return bool(((answer or {}).get("status") or {}).get("allowed"))

    return all(await asyncio.gather(allowed("list"), allowed("watch")))


class PerNamespaceInformer:
    """One informer per namespace of `namespaces` (the syncer's own), seen by the engine as one."""

    def __init__(self, client: DynamicClient, typ: APIType, *, cluster: str, label_selector: str | None,
                 namespaces: SharedInformer, transform: Transform | None = None,
                 own: Callable[[Obj], bool] | None = None) -> None:
        self.name = f"informer:{cluster}:{typ.api_version}/{typ.plural}[per namespace,{label_selector or ''}]"
        self._resource = typ.resource(client)
        self._cluster = cluster
        self._label_selector = label_selector
        self._transform = transform
        self._namespaces = namespaces
        self._own = own
        self._informers: dict[str, SharedInformer] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._stopping: list[asyncio.Task[None]] = []  # informers of namespaces gone, awaited by `stop`
        self._handlers: list[Callable[[SharedInformer], None]] = []
        namespaces.add_handler(on_add=self._namespace_seen, on_update=lambda old, new: self._namespace_seen(new),
                               on_delete=self._namespace_gone, name=f"{self.name}:namespaces")

    @property
    def indexer(self) -> PerNamespaceInformer:
        return self  # `get` and `by_index` below answer as an indexer would

    def get(self, key: ObjectKey) -> Obj | None:
        informer = self._informers.get(key.namespace)
        return None if informer is None else informer.indexer.get(key)

    def by_index(self, name: str, value: str) -> list[Obj]:
        if name == NAMESPACE_INDEX:
            informer = self._informers.get(value)
            return [] if informer is None else informer.indexer.by_index(name, value)
        return [obj for informer in self._informers.values() for obj in informer.indexer.by_index(name, value)]

    @property
    def holds_any(self) -> bool:
        """Some namespace's cache holds an object."""
        return any(len(informer.indexer) for informer in self._informers.values())

    @property
    def has_synced(self) -> bool:
        return self._namespaces.has_synced and all(i.has_synced for i in self._informers.values())

    async def wait_for_sync(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 - False on timeout
        """Wait until the namespaces and every namespace's informer have listed; False if `timeout` passed first."""
        async def synced() -> None:
            await self._namespaces.wait_for_sync()
            while not self.has_synced:
                await asyncio.gather(*(i.wait_for_sync() for i in list(self._informers.values())))
        try:
            await asyncio.wait_for(synced(), timeout)
        except TimeoutError:
            return False
        return True

    def add_handler(self, *, on_add: Handler | None = None, on_update: Handler | None = None,
                    on_delete: Handler | None = None, name: str = "handler") -> None:
        """Register handlers on every namespace's informer, now and to come."""
        def register(informer: SharedInformer) -> None:
            informer.add_handler(on_add=on_add, on_update=on_update, on_delete=on_delete, name=name)

        self._handlers.append(register)
        for informer in self._informers.values():
            register(informer)

    async def stop(self) -> None:
        tasks, self._tasks, self._stopping = [*self._tasks.values(), *self._stopping], {}, []
        await cancel_and_wait(*tasks)

    def _namespace_seen(self, namespace: Obj) -> None:
        name = str(meta(namespace).get("name") or "")
        if not name or name in self._informers or meta(namespace).get("deletionTimestamp"):
            return
        if self._own is not None and not self._own(namespace):
            return  # labelled as ours, but never bound to us: its reflector would wait forever
        informer = SharedInformer(self._resource, cluster=self._cluster, namespace=name,
                                  label_selector=self._label_selector, transform=self._transform,
                                  options=UNTIL_BOUND, name=f"{self.name}/{name}")
        for register in self._handlers:
            register(informer)
        self._informers[name] = informer
        self._tasks[name] = spawn(informer.run(), name=informer.name)

    def _namespace_gone(self, namespace: Obj | DeletedFinalStateUnknown) -> None:
        name = str(meta(deleted_object(namespace)).get("name") or "")
        self._informers.pop(name, None)
        task = self._tasks.pop(name, None)
        if task is not None:
            task.cancel()  # its objects went with the namespace; their deletes were watched before it went
            self._stopping.append(task)
