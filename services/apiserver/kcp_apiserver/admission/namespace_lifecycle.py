"""NamespaceLifecycle, as kube's plugin: no new content in a namespace that is missing or
terminating, and the namespaces every cluster relies on cannot be deleted."""

from __future__ import annotations

import time

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.admission import CREATE, DELETE, Attributes
from kcp_apiserver.registry.builtin import NAMESPACE
from kcp_apiserver.registry.informers import WatchCacheInformer, add_observer
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.storage.etcd import KeyNotFound, Storage, StorageError
from kcp_apiserver.storage.keys import object_key
from kcpcommon.keys import cluster_of
from kcpcommon.sharedcache import HandlerRegistration

IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
# kube's forceLiveLookupTTL: after admitting a namespace's delete, this long a create in it reads etcd, not a cache
# that may not have seen the deletion yet
FORCE_LIVE_LOOKUP_SECONDS = 30.0


class NamespaceLifecycle:
    """Knows every namespace's phase from the namespaces' informer (falling back to etcd for one it has not seen)."""

    def __init__(self, storage: Storage, namespaces: WatchCacheInformer) -> None:
        self.storage = storage
        self.namespaces = namespaces
        self.terminating: dict[tuple[str, str], bool] = {}  # (cluster, namespace) -> is terminating
        self.deleted_at: dict[tuple[str, str], float] = {}  # (cluster, namespace) -> when its delete was admitted
        self._handler: HandlerRegistration | None = None

    async def start(self) -> None:
        """Returns once every namespace stored at start is known."""
        self._handler = add_observer(self.namespaces, self._observe, name="admission:namespaces")
        await self._handler.wait_for_sync()

    async def stop(self) -> None:
        if self._handler is not None:
            self._handler.remove()

    def _observe(self, ns: Obj, deleted: bool) -> None:
        meta = ns["metadata"]
        key = (cluster_of(ns) or "", meta["name"])
        if deleted:
            self.terminating.pop(key, None)
        else:
            self.terminating[key] = bool(meta.get("deletionTimestamp"))

    def _remember_delete(self, key: tuple[str, str]) -> None:
        now = time.monotonic()
        for stale in [k for k, at in self.deleted_at.items() if now - at > FORCE_LIVE_LOOKUP_SECONDS]:
            del self.deleted_at[stale]
        self.deleted_at[key] = now

    def _deleted_lately(self, key: tuple[str, str]) -> bool:
        at = self.deleted_at.get(key)
        return at is not None and time.monotonic() - at <= FORCE_LIVE_LOOKUP_SECONDS

    async def validate(self, attrs: Attributes) -> None:
        res = attrs.resource
        if attrs.operation == DELETE:
            if res.prefix == NAMESPACE.prefix and attrs.name in IMMORTAL_NAMESPACES:
                raise st.APIError(403, "Forbidden",
                                  f'namespaces "{attrs.name}" is forbidden: this namespace may not be deleted',
                                  {"name": attrs.name, "kind": "namespaces"})
            if res.prefix == NAMESPACE.prefix:
                self._remember_delete((attrs.cluster, attrs.name))
            return
        if attrs.operation != CREATE or not res.namespaced:
            return
        key = (attrs.cluster, attrs.namespace)
        terminating = self.terminating.get(key)
        if terminating is None or (not terminating and self._deleted_lately(key)):
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
