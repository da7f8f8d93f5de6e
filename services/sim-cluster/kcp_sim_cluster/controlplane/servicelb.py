"""The service load-balancer controller: `type: LoadBalancer` Services get an external address.

A real cluster's cloud provider (or MetalLB, kwok, k3s's klipper-lb) writes
`status.loadBalancer.ingress` once it has a load balancer for the Service; clients wait on it (`helm
--wait`, kstatus, `kubectl get svc` EXTERNAL-IP). The sim hands out addresses from
`--load-balancer-ip-range`, split into one equal slice per simulated cluster, so the clusters of one
process never show the same address; each Service keeps its address while it stays a LoadBalancer,
and loses it (status emptied, address free again) when its type changes back or it is deleted.
Services with `spec.loadBalancerClass` belong to another implementation and are left alone, as kube's
service controller leaves them.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.events import NORMAL, WARNING
from kcp_sim_cluster.controlplane.informer import key_of
from kcp_sim_cluster.controlplane.objects import Obj
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey

log = structlog.get_logger("sim.servicelb")

COMPONENT = "service-controller"  # the component kube's Events name
LOAD_BALANCER = "LoadBalancer"


def cluster_ranges(cidr: str, clusters: Sequence[str]) -> dict[str, ipaddress.IPv4Network]:
    """`cidr` split into equal slices, the i-th for the i-th cluster (a ValueError if too small)."""
    network = ipaddress.IPv4Network(cidr, strict=False)
    bits = math.ceil(math.log2(len(clusters))) if len(clusters) > 1 else 0
    if network.prefixlen + bits > network.max_prefixlen:
        raise ValueError(f"range {cidr} has fewer addresses than the {len(clusters)} clusters")
    slices = network.subnets(prefixlen_diff=bits)
    return {cluster: next(slices) for cluster in clusters}


def wants_address(svc: Obj) -> bool:
    """A Service this controller gives a load balancer: type LoadBalancer, no other class named."""
    spec = svc.get("spec") or {}
    return spec.get("type") == LOAD_BALANCER and not spec.get("loadBalancerClass")


def ingress_ips(svc: Obj) -> list[str]:
    ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return [str(point["ip"]) for point in ingress if isinstance(point, Mapping) and point.get("ip")]


class AddressPool:
    """One cluster's slice of the range: which Service holds which address; the lowest free one goes next."""

    def __init__(self, network: ipaddress.IPv4Network) -> None:
        self.network = network
        self.held: dict[ObjectKey, str] = {}
        self.owner: dict[str, ObjectKey] = {}

    def _addresses(self) -> range:
        """Offsets handed out: a slice's network and broadcast addresses are skipped when it has others."""
        size = self.network.num_addresses
        return range(1, size - 1) if size > 2 else range(size)

    def take(self, ip: str, key: ObjectKey) -> None:
        """Record an address a Service already shows (seen in its status), if free and the Service has none."""
        if key not in self.held and ip not in self.owner:
            self.held[key], self.owner[ip] = ip, key

    def allocate(self, key: ObjectKey) -> str | None:
        """The Service's address: the one it holds, else the lowest free one; None when the slice is full."""
        if key in self.held:
            return self.held[key]
        for offset in self._addresses():
            ip = str(self.network.network_address + offset)
            if ip not in self.owner:
                self.held[key], self.owner[ip] = ip, key
                return ip
        return None

    def release(self, key: ObjectKey) -> None:
        ip = self.held.pop(key, None)
        if ip is not None:
            self.owner.pop(ip, None)


def _set_ingress(ips: list[str]) -> Any:
    def mutate(current: dict[str, Any]) -> bool:
        if ingress_ips(current) == ips and ((current.get("status") or {}).get("loadBalancer") is not None):
            return False
        current.setdefault("status", {})["loadBalancer"] = {"ingress": [{"ip": ip} for ip in ips]} if ips else {}
        return True
    return mutate


class ServiceLoadBalancer(SimController):
    name = "sim-service-lb"
    needs = ("services",)

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.res: Resource = sim.resource("services")  # type: ignore[assignment]
        ranges = cluster_ranges(sim.options.load_balancer_ip_range, sim.options.clusters or ("",))
        self.pools = {cluster: AddressPool(network) for cluster, network in ranges.items()}

    def wire(self) -> None:
        self.sim.informer("services").add_handler(self._on_service)

    def _on_service(self, old: Obj | None, new: Obj | None) -> None:
        """Addresses shown in status are taken (so a restart keeps them); releases happen in `reconcile`."""
        obj = new if new is not None else old
        assert obj is not None
        key = key_of(obj)
        pool = self.pools.get(key.cluster)
        if pool is None:
            return
        if new is not None and wants_address(new):
            for ip in ingress_ips(new):
                pool.take(ip, key)
        if new is None or wants_address(new) or ingress_ips(new):
            self.controller.enqueue(key)

    async def reconcile(self, key: ObjectKey) -> Result | None:
        pool = self.pools.get(key.cluster)
        svc = self.sim.informer("services").get(key)
        if pool is None:
            return None
        if svc is None or not wants_address(svc):
            pool.release(key)
            if svc is not None and ingress_ips(svc):
                await self.sim.write_status(self.res, svc, _set_ingress([]))
                self.sim.recorder.record(svc, NORMAL, "DeletedLoadBalancer", "Deleted load balancer",
                                         component=COMPONENT)
            return None
        ip = pool.allocate(key)
        if ip is None:
            self.sim.recorder.record(svc, WARNING, "SyncLoadBalancerFailed",
                                     f"Error syncing load balancer: no free address in {pool.network}",
                                     component=COMPONENT)
            return None
        if ingress_ips(svc) == [ip]:
            return None
        self.sim.recorder.record(svc, NORMAL, "EnsuringLoadBalancer", "Ensuring load balancer", component=COMPONENT)
        if await self.sim.write_status(self.res, svc, _set_ingress([ip])) is not None:
            self.sim.recorder.record(svc, NORMAL, "EnsuredLoadBalancer", "Ensured load balancer", component=COMPONENT)
        return None
