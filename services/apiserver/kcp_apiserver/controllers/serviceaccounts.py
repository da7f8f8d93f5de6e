"""The service-account controller: every active namespace of every logical cluster has a `default`
ServiceAccount, as kube's serviceaccounts-controller ensures (and it comes back when deleted). A logical
cluster's system namespaces are born with theirs; this adds them to namespaces made later.

Driven by events only: a namespace appearing, or a `default` ServiceAccount going away. Each check
is two watch-cache lookups, so following 10,000 logical clusters costs a dict lookup per namespace;
a write happens only where the account is missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import structlog

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.builtin import NAMESPACE, SERVICE_ACCOUNT
from kcp_apiserver.registry.clusters import DEFAULT_SERVICE_ACCOUNT
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import Storage, StorageError
from kcp_apiserver.storage.keys import object_key
from kcp_apiserver.storage.watchcache import Follower, WatchCache, Watcher
from kcpcommon.controller import Controller, Result
from kcpcommon.keys import CLUSTER_ANNOTATION
from kcpcommon.tasks import cancel_and_wait, spawn, supervise

log = structlog.get_logger("serviceaccounts")

RETRY_SECONDS = 1.0  # etcd unavailable: try again this soon


def _following(follower: Follower, first: Watcher) -> Callable[[], Coroutine[Any, Any, None]]:
    """What `supervise` restarts: follow from the first snapshot's watcher, then from a fresh one."""
    pending = [first]

    async def follow() -> None:
        await follower.follow(pending.pop() if pending else await follower.resync())

    return follow


def _cluster(obj: Obj) -> str:
    return str((obj["metadata"].get("annotations") or {}).get(CLUSTER_ANNOTATION, ""))


class ServiceAccountsController:
    """Creates the `default` ServiceAccount in each namespace that lacks it."""

    def __init__(self, storage: Storage, namespaces: WatchCache, accounts: WatchCache, registry: Registry) -> None:
        self.storage = storage
        self.namespaces = namespaces
        self.accounts = accounts
        self.registry = registry
        self.controller: Controller[tuple[str, str]] = Controller("serviceaccount", self.reconcile, workers=2)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        followers = [Follower(self.storage, self.namespaces, observe=self._namespace, reset=lambda: None,
                              name="controller:serviceaccounts:namespaces"),
                     Follower(self.storage, self.accounts, observe=self._account, reset=lambda: None,
                              name="controller:serviceaccounts:accounts")]
        for follower in followers:
            first = await follower.resync()
            self._tasks.append(spawn(supervise(_following(follower, first), name=follower.name), name=follower.name))
        self._tasks.append(spawn(self.controller.start(), name="controller:serviceaccounts"))

    async def stop(self) -> None:
        await cancel_and_wait(*self._tasks)

    def _namespace(self, ns: Obj, deleted: bool) -> None:
        if not deleted and not ns["metadata"].get("deletionTimestamp"):
            self.controller.enqueue((_cluster(ns), ns["metadata"]["name"]))

    def _account(self, account: Obj, deleted: bool) -> None:
        meta = account["metadata"]
        if deleted and meta["name"] == DEFAULT_SERVICE_ACCOUNT:
            self.controller.enqueue((_cluster(account), meta.get("namespace", "")))

    def needs_default(self, cluster: str, namespace: str) -> bool:
        """The namespace exists, is not terminating, and has no `default` ServiceAccount (in the caches)."""
        ns = self.namespaces.state.get(object_key(NAMESPACE.prefix, cluster, "", namespace))
        if ns is None:
            return False
        if self.accounts.state.get(object_key(SERVICE_ACCOUNT.prefix, cluster, namespace, DEFAULT_SERVICE_ACCOUNT)):
            return False
        return not ns.decode()["metadata"].get("deletionTimestamp")

    async def reconcile(self, key: tuple[str, str]) -> Result | None:
        cluster, namespace = key
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
