"""The service-account controller: every active namespace of every logical cluster has a `default`
ServiceAccount, as kube's serviceaccounts-controller ensures (and it comes back when deleted). A logical
cluster's system namespaces are born with theirs; this adds them to namespaces made later.

Driven by events only: a namespace appearing, or a `default` ServiceAccount going away. Each check
is two informer lookups, so following 10,000 logical clusters costs a dict lookup per namespace;
a write happens only where the account is missing.
"""

from __future__ import annotations

import asyncio

import structlog
from prometheus_client import CollectorRegistry

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.builtin import NAMESPACE, SERVICE_ACCOUNT
from kcp_apiserver.registry.clusters import DEFAULT_SERVICE_ACCOUNT
from kcp_apiserver.registry.informers import Informers, WatchCacheInformer
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import Storage, StorageError
from kcp_apiserver.storage.keys import ObjectKey, object_key
from kcpcommon.controller import Controller, Result
from kcpcommon.keys import cluster_of
from kcpcommon.sharedcache import DeletedFinalStateUnknown, HandlerRegistration, deleted_object
from kcpcommon.tasks import cancel_and_wait, spawn

log = structlog.get_logger("serviceaccounts")

RETRY_SECONDS = 1.0  # etcd unavailable: try again this soon


def _default_account(cluster: str, namespace: str) -> ObjectKey:
    """The key the controller works on: the account it makes sure of."""
    return ObjectKey(cluster, namespace, DEFAULT_SERVICE_ACCOUNT)


class ServiceAccountsController:
    """Creates the `default` ServiceAccount in each namespace that lacks it (handlers on two informers)."""

    def __init__(self, storage: Storage, informers: Informers, registry: Registry, *,
                 metrics: CollectorRegistry | None = None) -> None:
        self.storage = storage
        self.informers = informers
        self.registry = registry
        self.controller: Controller[ObjectKey] = Controller("serviceaccount", self.reconcile, workers=2,
                                                            registry=metrics, component="kcp_apiserver")
        self.namespaces: WatchCacheInformer | None = None
        self.accounts: WatchCacheInformer | None = None
        self._handlers: list[HandlerRegistration] = []
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self.namespaces = await self.informers.get(NAMESPACE)
        self.accounts = await self.informers.get(SERVICE_ACCOUNT)
        self._handlers = [
            self.namespaces.add_handler(on_add=self._namespace, on_update=lambda _, ns: self._namespace(ns),
                                        name="controller:serviceaccount"),
            self.accounts.add_handler(on_delete=self._account_gone, name="controller:serviceaccount")]
        self._tasks.append(spawn(self.controller.start(wait_for=[h.wait_for_sync() for h in self._handlers]),
                                 name="controller:serviceaccount"))

    async def stop(self) -> None:
        for handler in self._handlers:
            handler.remove()
        await cancel_and_wait(*self._tasks)

    def _namespace(self, ns: Obj) -> None:
        if not ns["metadata"].get("deletionTimestamp"):
            self.controller.enqueue(_default_account(cluster_of(ns) or "", ns["metadata"]["name"]))

    def _account_gone(self, account: Obj | DeletedFinalStateUnknown) -> None:
        meta = deleted_object(account)["metadata"]
        if meta["name"] == DEFAULT_SERVICE_ACCOUNT:
            self.controller.enqueue(_default_account(cluster_of(deleted_object(account)) or "",
                                                     meta.get("namespace", "")))

    def needs_default(self, cluster: str, namespace: str) -> bool:
        """The namespace exists, is not terminating, and has no `default` ServiceAccount (in the informers)."""
        assert self.namespaces is not None and self.accounts is not None, "started"
        if _default_account(cluster, namespace) in self.accounts.indexer:
            return False
        ns = self.namespaces.indexer.get(ObjectKey(cluster, "", namespace))
        return ns is not None and not ns["metadata"].get("deletionTimestamp")

    async def reconcile(self, key: ObjectKey) -> Result | None:
        cluster, namespace = key.cluster, key.namespace
        if not cluster or not self.needs_default(cluster, namespace):
            return None
        account = {"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}}
        try:
            # the accounts' cache may lag the namespaces' (a logical cluster is born with both at once):
            # a read settles that more cheaply than a create etcd would refuse
            if await self.storage.exists(object_key(SERVICE_ACCOUNT.prefix, cluster, namespace,
                                                    DEFAULT_SERVICE_ACCOUNT)):
                return None
            await self.registry.create(SERVICE_ACCOUNT, cluster, namespace, account)
        except StorageError:
            return Result(requeue_after=RETRY_SECONDS)
        except st.APIError as exc:
            if exc.code in (403, 404, 409):  # namespace going away or gone, or the account exists already
                return None
            log.warning("default service account not created", cluster=cluster, namespace=namespace,
                        reason=exc.reason)
            return Result(requeue_after=RETRY_SECONDS)
        return None
