"""The agent's Nodes, kept as a kubelet keeps its own: registered, their status reported, their Lease renewed.

A kubelet registers its Node (capacity and allocatable, addresses, nodeInfo, a pod CIDR), writes its
status when it changes and at least every `STATUS_REPORT_SECONDS` (kube's nodeStatusReportFrequency
while a Lease carries the heartbeat; every quarter of the lease duration on a server without
coordination.k8s.io), and renews its Lease in kube-node-lease every quarter of its duration. A Node
someone deleted registers again. As with the in-process sim's nodes, the annotation `sim.kcp.io/not-ready:
"true"` plays a sick kubelet: Ready=False and no more Lease renewals, until it is removed. Nodes are keyed
by name; the agent touches no other node.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections.abc import Mapping
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from kcp_sim_cluster.agent.server import ServerFacts
from kcp_sim_cluster.kubeletstatus import node_status, wants_not_ready
from kcpcommon.clients import KubeClientFactory
from kcpcommon.controller import Controller, Result
from kcpcommon.errors import APIAlreadyExistsError, APIClientError, APIConflictError, APINotFoundError
from kcpcommon.frozen import thaw
from kcpcommon.informer import Obj, SharedInformer, deleted_object
from kcpcommon.informer_factory import SharedInformerFactory
from kcpcommon.keys import ObjectKey
from kcpcommon.kubetime import format_micro_time, format_time

log = structlog.get_logger("sim-agent.nodes")

COMPONENT = "kcp-sim-cluster-agent"
AGENT_LABEL = "sim.kcp.io/agent"  # on every node the agent registers: `kubectl get nodes -l sim.kcp.io/agent`
LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
LEASE_RENEW_SECONDS = LEASE_DURATION_SECONDS / 4  # the kubelet's default renewal
STATUS_REPORT_SECONDS = 300.0
REGISTER_POLL_SECONDS = 0.5
MIN_REQUEUE_SECONDS = 0.1
MAX_CIDRS = 2048


def host_ip(index: int) -> str:
    """The node's InternalIP (172.30/16: apart from the in-process sim's 172.18 nodes)."""
    return f"172.30.{index // 250}.{index % 250 + 2}"


def pod_cidr(index: int) -> str:
    """A /20 per node from 10.128.0.0 up (the in-process sim's nodes take 10.64.0.0 and up)."""
    start = ipaddress.ip_address("10.128.0.0") + (index % MAX_CIDRS) * 4096
    return f"{start}/20"


def new_node(name: str, index: int) -> dict[str, Any]:
    """What a kubelet registers (its status follows in a status write)."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name,
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                                "beta.kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "sim",
                                AGENT_LABEL: "true"},
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"podCIDR": pod_cidr(index), "podCIDRs": [pod_cidr(index)]},
    }


def new_lease(name: str, stamp: str, duration: int = LEASE_DURATION_SECONDS) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": duration, "renewTime": stamp},
    }


def report_heartbeat(node: dict[str, Any], stamp: str) -> None:
    """Every condition was probed just now (what a periodic status report says)."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        cond["lastHeartbeatTime"] = stamp


class NodeAgent:
    """Registers the nodes named in `indexes` (name -> index) and keeps them Ready."""

    def __init__(self, clients: KubeClientFactory, factory: SharedInformerFactory, *, indexes: Mapping[str, int],
                 capacity: Mapping[str, str], facts: ServerFacts, registry: CollectorRegistry,
                 lease_duration: int = LEASE_DURATION_SECONDS) -> None:
        self.cluster = clients.name
        client = clients.dynamic()
        self.nodes = client.resource("v1", "nodes", namespaced=False)
        self.leases = client.resource("coordination.k8s.io/v1", "leases", namespaced=True)
        self.namespaces = client.resource("v1", "namespaces", namespaced=False)
        self.indexes = dict(indexes)
        self.capacity = dict(capacity)
        self.facts = facts
        self.lease_duration = lease_duration
        self.renew_every = lease_duration / 4  # the kubelet renews at a quarter of the duration (10 s of 40)
        self.report_every = STATUS_REPORT_SECONDS if facts.serves_leases else self.renew_every
        self.informer: SharedInformer = factory.informer(cluster=self.cluster, api_version="v1", plural="nodes",
                                                         namespaced=False)
        self.controller: Controller[ObjectKey] = Controller("sim-agent-nodes", self.reconcile, workers=4,
                                                            registry=registry, component=COMPONENT)
        self.reported: dict[str, float] = {}  # node -> monotonic time of its last status write
        self.held: dict[str, Obj] = {}  # node -> its Lease as last written
        self.informer.add_handler(on_add=self._changed, on_update=lambda old, new: self._changed(new),
                                  on_delete=lambda gone: self._changed(deleted_object(gone)), name="sim-agent-nodes")
        for name in self.indexes:
            self.controller.enqueue(ObjectKey(self.cluster, "", name))

    def _changed(self, node: Obj) -> None:
        name = (node.get("metadata") or {}).get("name", "")
        if name in self.indexes:
            self.controller.enqueue(ObjectKey(self.cluster, "", name))

    def registered(self) -> bool:
        """Every node has reported its status and, where the server has them, holds its Lease."""
        leases_held = not self.facts.serves_leases or len(self.held) == len(self.indexes)
        return len(self.reported) == len(self.indexes) and leases_held

    async def run(self) -> None:
        """The node workers and, where the server has them, the Lease heartbeats, until cancelled."""
        work = [self.controller.start([self.informer.wait_for_sync])]
        if self.facts.serves_leases:
            work.append(self._heartbeats())
        await asyncio.gather(*work)

    async def reconcile(self, key: ObjectKey) -> Result | None:
        name = key.name
        node = self.informer.indexer.get_copy(key)
        if node is None:
            try:
                await self.nodes.create(new_node(name, self.indexes[name]))
                log.info("node registered", node=name)
            except APIAlreadyExistsError:
                pass  # the cache is behind: its event brings the node back here
            return None
        stamp = format_time()
        changed = node_status(node, capacity=self.capacity, kubelet_version=self.facts.kubelet_version,
                              address=host_ip(self.indexes[name]), machine_id=f"sim-agent-{self.indexes[name]}",
                              ready=not wants_not_ready(node), stamp=stamp)
        due = time.monotonic() - self.reported.get(name, float("-inf")) >= self.report_every
        if due:
            report_heartbeat(node, stamp)
        if changed or due:
            await self.nodes.patch(name, {"status": node["status"]}, subresource="status")
            self.reported[name] = time.monotonic()
        next_report = self.reported[name] + self.report_every - time.monotonic()
        return Result(requeue_after=max(next_report, MIN_REQUEUE_SECONDS))

    async def _heartbeats(self) -> None:
        """Renew each registered node's Lease every quarter of its duration (a kubelet starts its Lease once its
        Node exists, so the Lease can name its owner); a node still registering is tried again sooner, and
        a node annotated `sim.kcp.io/not-ready: "true"` (a sick kubelet) is not renewed."""
        while True:
            known = {n: self.informer.indexer.get(ObjectKey(self.cluster, "", n)) for n in self.indexes}
            healthy = [n for n, node in known.items() if node is not None and not wants_not_ready(node)]
            await asyncio.gather(*(self._renew(name) for name in healthy))
            registered = all(node is not None for node in known.values())
            await asyncio.sleep(self.renew_every if registered else REGISTER_POLL_SECONDS)

    async def _renew(self, name: str) -> None:
        stamp = format_micro_time()
        try:
            lease = self.held.get(name)
            if lease is None:
                self.held[name] = await self._take_lease(name, stamp)
                return
            body = thaw(lease)
            body["spec"]["renewTime"] = stamp
            self._own(body)
            self.held[name] = await self.leases.replace(body, namespace=LEASE_NAMESPACE)
        except APIClientError as exc:  # read afresh next round, as the kubelet does after a failed renewal
            self.held.pop(name, None)
            level = log.info if isinstance(exc, (APIConflictError, APINotFoundError)) else log.warning
            level("node lease not renewed", node=name, error=str(exc))

    def _own(self, lease: dict[str, Any]) -> None:
        """The Node owns its Lease (so it goes with the Node), once the Node is known, as the kubelet sets it."""
        meta = lease["metadata"]
        node = self.informer.indexer.get(ObjectKey(self.cluster, "", meta["name"]))
        if node is not None and not meta.get("ownerReferences"):
            meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": meta["name"],
                                        "uid": node["metadata"]["uid"]}]

    async def _take_lease(self, name: str, stamp: str) -> Obj:
        """The node's Lease, renewed now: the existing one (after a restart) or a new one."""
        try:
            body = thaw(await self.leases.get(name, namespace=LEASE_NAMESPACE))
        except APINotFoundError:
            return await self._create_lease(new_lease(name, stamp, self.lease_duration))
        body.setdefault("spec", {}).update({"holderIdentity": name, "leaseDurationSeconds": self.lease_duration,
                                            "renewTime": stamp})
        self._own(body)
        return await self.leases.replace(body, namespace=LEASE_NAMESPACE)

    async def _create_lease(self, lease: dict[str, Any]) -> Obj:
        self._own(lease)
        try:
            return await self.leases.create(lease, namespace=LEASE_NAMESPACE)
        except APINotFoundError:  # no kube-node-lease yet (kube's apiserver makes it; a bare server may not)
            try:
                await self.namespaces.create({"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": LEASE_NAMESPACE}})
            except APIAlreadyExistsError:
                pass
            return await self.leases.create(lease, namespace=LEASE_NAMESPACE)

    async def delete_nodes(self) -> None:
        """Remove the nodes (and so, through their owner references, their Leases): --delete-nodes-on-exit."""
        for name in self.indexes:
            try:
                await self.nodes.delete(name)
                log.info("node deleted", node=name)
            except APINotFoundError:
                pass
