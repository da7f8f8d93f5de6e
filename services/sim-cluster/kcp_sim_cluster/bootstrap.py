"""What kube-apiserver's bootstrap controller makes in a cluster before anyone writes: the system
namespaces (the logical cluster's birth), the `default/kubernetes` Service, with the first address
of the service CIDR, and its Endpoints and EndpointSlice naming the API server, and the system
PriorityClasses (made again at every start when missing, as kube's post-start hook does)."""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any

import structlog

from kcp_apiserver.embedding import (
    SYSTEM_CLASSES,
    APIError,
    Registry,
    ServerParts,
    kubernetes_service,
    system_class,
)
from kcp_sim_cluster.api import resource
from kcp_sim_cluster.api.serviceips import SERVICE_CIDR
from kcpcommon.backoff import Backoff

log = structlog.get_logger("kcp-sim-cluster")

STARTUP_RETRY_MIN, STARTUP_RETRY_MAX = 0.2, 5.0  # seconds between tries to reach etcd at startup

KUBERNETES = "kubernetes"


def kubernetes_objects(address: str, port: int,
                       cidr: ipaddress.IPv4Network = SERVICE_CIDR) -> list[tuple[str, str, dict[str, Any]]]:
    """(group, plural, object) of the `kubernetes` Service and its endpoints, as kube-apiserver writes them,
    and of the system PriorityClasses."""
    https = {"name": "https", "port": port, "protocol": "TCP"}
    return [
        ("", "services", kubernetes_service(cidr, port)),
        ("", "endpoints", {
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": KUBERNETES, "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": address}], "ports": [https]}]}),
        ("discovery.k8s.io", "endpointslices", {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": KUBERNETES, "labels": {"kubernetes.io/service-name": KUBERNETES,
                                                        "endpointslice.kubernetes.io/managed-by":
                                                            "endpointslice-controller.k8s.io"}},
            "addressType": "IPv4", "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
            "ports": [https]}),
        *(("scheduling.k8s.io", "priorityclasses", system_class(name)) for name in SYSTEM_CLASSES),
    ]


class ClusterBootstrap:
    """Every simulated cluster exists from the start, as a real cluster's apiserver makes it before
    anyone writes (a logical cluster is otherwise born on its first write)."""

    def __init__(self, parts: ServerParts, release: str, clusters: tuple[str, ...], address: str,
                 port: int, service_cidr: ipaddress.IPv4Network = SERVICE_CIDR) -> None:
        assert parts.registry is not None
        self.registry: Registry = parts.registry
        self.release = release
        self.clusters = clusters
        self.address = address
        self.port = port
        self.service_cidr = service_cidr

    async def start(self) -> None:
        for cluster in self.clusters:
            await self._retry(cluster, self._bootstrap)

    async def _bootstrap(self, cluster: str) -> None:
        await self.registry.ensure_cluster(cluster)
        for group, plural, obj in kubernetes_objects(self.address, self.port, self.service_cidr):
            res = resource(self.release, group, plural)
            namespace, name = ("default" if res.namespaced else ""), obj["metadata"]["name"]
            try:
                await self.registry.get(res, cluster, namespace, name)
            except APIError as exc:
                if exc.code != 404:
                    raise
                try:
                    await self.registry.create(res, cluster, namespace, obj)
                except APIError as created:
                    if created.code != 409:  # another replica made it first
                        raise

    @staticmethod
    async def _retry(cluster: str, step: Any) -> None:
        backoff = Backoff(initial=STARTUP_RETRY_MIN, cap=STARTUP_RETRY_MAX)
        while True:
            try:
                await step(cluster)
                return
            except APIError as exc:
                if exc.code not in (500, 503, 504):
                    raise
                delay = backoff.next()
                log.warning("etcd unavailable at startup, retrying", cluster=cluster, error=exc.message,
                            retry_in=round(delay, 2))
                await asyncio.sleep(delay)

    async def stop(self) -> None:
        return None
