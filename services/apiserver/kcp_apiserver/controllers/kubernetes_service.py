"""The `default/kubernetes` Service of every logical cluster that serves Services, as kube-apiserver's bootstrap
controller keeps one in a cluster (and makes it again when deleted): the first address of the service range,
port 443 (`https`) to the API server's port, labelled `component: apiserver, provider: kubernetes`.

In kcp a logical cluster serves core/v1 Services once a SyncTarget imports them (or a binding does), so the
Service is made then, from kcp's range, naming kcp's own port. It is kcp's own, as each physical cluster has its
own: the namespace rule and the syncers leave it in kcp. Driven by events: a cluster starting to serve Services
(the catalog), and the Service going away (the Services' informer).
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from kcp_apiserver.admission.serviceips import SERVICES
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.catalog import Catalog
from kcp_apiserver.registry.informers import Informers, WatchCacheInformer
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import StorageError
from kcp_apiserver.storage.keys import ObjectKey
from kcpcommon.controller import Controller, Result
from kcpcommon.keys import cluster_of
from kcpcommon.sharedcache import DeletedFinalStateUnknown, HandlerRegistration, deleted_object
from kcpcommon.tasks import cancel_and_wait, spawn

log = structlog.get_logger("kubernetes-service")

NAME, NAMESPACE = "kubernetes", "default"
LABELS = {"component": "apiserver", "provider": "kubernetes"}
RETRY_SECONDS = 1.0  # etcd unavailable, or the namespace not there yet: try again this soon


def kubernetes_service(cidr: ipaddress.IPv4Network, port: int) -> dict[str, Any]:
    """The Service as kube-apiserver writes it: the range's first address, 443 to the server's `port`."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": dict(LABELS)},
            "spec": {"clusterIP": str(cidr.network_address + 1), "type": "ClusterIP", "sessionAffinity": "None",
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}}


def is_kubernetes_service(kind: str, namespace: str, name: str) -> bool:
    return (kind, namespace, name) == ("Service", NAMESPACE, NAME)


class KubernetesServiceController:
    """Makes `default/kubernetes` in each logical cluster serving Services that lacks it."""

    def __init__(self, informers: Informers, catalog: Catalog, registry: Registry, *,
                 cidr: ipaddress.IPv4Network, port: int, metrics: CollectorRegistry | None = None) -> None:
        self.informers = informers
        self.catalog = catalog
        self.registry = registry
        self.cidr = cidr
        self.port = port
        self.controller: Controller[str] = Controller("kubernetes-service", self.reconcile, workers=1,
                                                      registry=metrics, component="kcp_apiserver")
        self.services: WatchCacheInformer | None = None
        self._handlers: list[HandlerRegistration] = []
        self._unlisten: Callable[[], None] | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self.services = await self.informers.get(SERVICES)
        self._handlers = [self.services.add_handler(on_delete=self._service_gone, name="controller:kubernetes-service")]
        self._unlisten = self.catalog.add_listener(self._served)
        for cluster in self.catalog.clusters_serving(SERVICES.group, SERVICES.version, SERVICES.plural):
            self.controller.enqueue(cluster)
        self._tasks.append(spawn(self.controller.start(wait_for=[h.wait_for_sync() for h in self._handlers]),
                                 name="controller:kubernetes-service"))

    async def stop(self) -> None:
        if self._unlisten is not None:
            self._unlisten()
        for handler in self._handlers:
            handler.remove()
        await cancel_and_wait(*self._tasks)

    def _served(self, cluster: str, resources: list[Resource]) -> None:
        if any(_is_services(res) for res in resources):
            self.controller.enqueue(cluster)

    def _service_gone(self, svc: Obj | DeletedFinalStateUnknown) -> None:
        obj = deleted_object(svc)
        meta = obj["metadata"]
        if is_kubernetes_service("Service", meta.get("namespace", ""), meta.get("name", "")):
            self.controller.enqueue(cluster_of(obj) or "")

    async def reconcile(self, cluster: str) -> Result | None:
        assert self.services is not None, "started"
        res = self.catalog.lookup(cluster, SERVICES.group, SERVICES.version, SERVICES.plural)
        if not cluster or res is None or not _is_services(res):
            return None
        if ObjectKey(cluster, NAMESPACE, NAME) in self.services.indexer:
            return None
        try:
            await self.registry.create(res, cluster, NAMESPACE, kubernetes_service(self.cidr, self.port))
        except StorageError:
            return Result(requeue_after=RETRY_SECONDS)
        except st.APIError as exc:
            if exc.code == 409:  # made already (the cache lags)
                return None
            log.warning("kubernetes service not created", cluster=cluster, reason=exc.reason, message=exc.message)
            return Result(requeue_after=RETRY_SECONDS)
        log.info("kubernetes service created", cluster=cluster)
        return None


def _is_services(res: Resource) -> bool:
    return (res.group, res.version, res.plural) == (SERVICES.group, SERVICES.version, SERVICES.plural) and res.kube_type
