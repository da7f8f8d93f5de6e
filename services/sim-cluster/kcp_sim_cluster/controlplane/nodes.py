"""The simulated nodes' kubelets, as the API sees them: registered Node objects and their heartbeats.

Each simulated cluster gets `--nodes` nodes (`sim-node-1`, ...) with the configured capacity as
capacity and allocatable, node info, addresses and a pod CIDR. A node is Ready unless it carries the
annotation `sim.kcp.io/not-ready: "true"`, which plays a kubelet that stopped being healthy.
Heartbeats are Leases in kube-node-lease, renewed every `LEASE_RENEW_SECONDS` with one etcd write
each. A node deleted by a user registers again, as a kubelet does.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Awaitable
from typing import Any

import structlog

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.objects import Obj, get_condition, set_condition
from kcp_sim_cluster.controlplane.runtime import Sim
from kcp_sim_cluster.kubeletstatus import node_status, wants_not_ready
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey
from kcpcommon.kubetime import format_micro_time
from kcpcommon.kubetime import format_time as rfc3339

log = structlog.get_logger("sim.nodes")

LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
LEASE_RENEW_SECONDS = 10.0
DEFAULT_RELEASE = "1.34"
NODE_PREFIX = "sim-node-"
POD_NETWORK = "10.64.0.0/10"  # what --pod-network defaults to
NODE_CIDR_PREFIX = 20  # each node's pod CIDR: room for 4,094 pods


def node_names(count: int) -> list[str]:
    return [f"{NODE_PREFIX}{i}" for i in range(1, count + 1)]


def node_index(name: str) -> int:
    try:
        return int(name.removeprefix(NODE_PREFIX))
    except ValueError:
        return 0


def pod_cidr(index: int, network: str = POD_NETWORK) -> str:
    """The index-th /20 of `network` (the cluster's slice of --pod-network), wrapping round when it has fewer."""
    cidr = ipaddress.IPv4Network(network, strict=False)
    count = max(1, 2 ** max(0, NODE_CIDR_PREFIX - cidr.prefixlen))
    start = cidr.network_address + (index % count) * 2 ** (32 - NODE_CIDR_PREFIX)
    return f"{start}/{max(NODE_CIDR_PREFIX, cidr.prefixlen)}"


def host_ip(index: int) -> str:
    return f"172.18.{index // 250}.{index % 250 + 2}"


def node_ready(node: Obj) -> bool:
    cond = get_condition(node.get("status"), "Ready")
    return bool(cond and cond.get("status") == "True")


class NodeController(SimController):
    name = "sim-nodes"
    needs = ("nodes", "leases", "namespaces")

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.node_res: Resource = sim.resource("nodes")  # type: ignore[assignment]
        self.lease_res: Resource = sim.resource("leases")  # type: ignore[assignment]
        self.ns_res: Resource = sim.resource("namespaces")  # type: ignore[assignment]
        self.names = set(node_names(sim.options.nodes))
        release = getattr(sim.resource("pods"), "release", "") or DEFAULT_RELEASE
        self.kubelet_version = f"v{release}.0"  # the kubelets run the release the API serves

    def wire(self) -> None:
        self.sim.informer("nodes").add_handler(lambda old, new: self.enqueue(new if new is not None else old))

    def initial_keys(self) -> list[ObjectKey]:
        return [ObjectKey(c, "", n) for c in self.sim.options.clusters for n in sorted(self.names)]

    def background(self) -> list[Any]:
        return [self._heartbeats()]

    async def reconcile(self, key: ObjectKey) -> Result | None:
        node = self.sim.informer("nodes").get(key)
        if key.name not in self.names:
            if node is not None and key.name.startswith(NODE_PREFIX):
                await self.sim.write_status(self.node_res, node, _unreachable)  # a node --nodes no longer runs
            return None
        if node is None:
            await self.sim.create(self.node_res, key.cluster, "", self._node(key.cluster, key.name))
            return None  # its status is written when the informer sees it
        await self.sim.write_status(self.node_res, node, lambda current: self._status(current))
        return None

    def _node(self, cluster: str, name: str) -> dict[str, Any]:
        index = node_index(name)
        networks = self.sim.options.pod_networks
        network = networks.get(cluster) or networks.get("") or POD_NETWORK
        return {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                                    "beta.kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "sim"},
                         "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                         "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": {"podCIDR": pod_cidr(index, network), "podCIDRs": [pod_cidr(index, network)]},
        }

    def _status(self, node: dict[str, Any]) -> bool:
        """The status a healthy (or, by annotation, unhealthy) kubelet reports; True if it changed."""
        index = node_index(node["metadata"]["name"])
        return node_status(node, capacity=self.sim.options.node_capacity, kubelet_version=self.kubelet_version,
                           address=host_ip(index), machine_id=f"sim-{index}", ready=not wants_not_ready(node),
                           stamp=rfc3339())

    async def _heartbeats(self) -> None:
        """Renew every node's Lease; create the namespace and the Leases on the first round."""
        await self.sim.informer("leases").wait_for_sync()
        while True:
            for cluster in self.sim.options.clusters:
                try:
                    await self._renew(cluster)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("node heartbeats failed", cluster=cluster)
            await asyncio.sleep(LEASE_RENEW_SECONDS)

    async def _renew(self, cluster: str) -> None:
        leases = self.sim.informer("leases")
        stamp = format_micro_time()
        writes: list[Awaitable[Any]] = []
        for name in sorted(self.names):
            lease = leases.get(ObjectKey(cluster, LEASE_NAMESPACE, name))
            node = self.sim.informer("nodes").get(ObjectKey(cluster, "", name))
            if node is not None and wants_not_ready(node):
                continue  # a sick kubelet stops heartbeating
            if lease is None:
                writes.append(self._create_lease(cluster, name, node, stamp))
                continue

            def renew(current: dict[str, Any]) -> bool:
                current.setdefault("spec", {})["renewTime"] = stamp
                return True

            writes.append(self.sim.write_status(self.lease_res, lease, renew))
        if writes:
            await asyncio.gather(*writes)

    async def _create_lease(self, cluster: str, name: str, node: Obj | None, stamp: str) -> None:
        if self.sim.informer("namespaces").get(ObjectKey(cluster, "", LEASE_NAMESPACE)) is None:
            await self.sim.create(self.ns_res, cluster, "", {"apiVersion": "v1", "kind": "Namespace",
                                                             "metadata": {"name": LEASE_NAMESPACE}})
        lease: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION_SECONDS, "renewTime": stamp},
        }
        if node is not None:
            lease["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": name,
                                                     "uid": node["metadata"]["uid"]}]
        await self.sim.create(self.lease_res, cluster, LEASE_NAMESPACE, lease)


def _unreachable(node: dict[str, Any]) -> bool:
    """What the node lifecycle controller writes for a kubelet that stopped reporting: every condition Unknown."""
    status = node.setdefault("status", {})
    changed = False
    for cond in [dict(c) for c in status.get("conditions") or []]:
        changed |= set_condition(status, cond["type"], "Unknown", "NodeStatusUnknown",
                                 "Kubelet stopped posting node status.")
    return changed

