"""The kubelets of the simulated nodes: bound pods run, turn Ready, crash or complete.

A pod bound to a simulated node of a Ready node gets, in one status write, phase Running, a pod IP
from its node's CIDR, hostIP, startTime, a running status per container and the conditions
PodReadyToStartContainers, Initialized, ContainersReady, Ready and PodScheduled; Ready turns True
`ready_delay` seconds after the start (in that same write when the delay is 0). Pod-template
annotations steer it: `sim.kcp.io/ready: "false"` keeps it unready; `sim.kcp.io/crash: "true"`
makes its containers crash and restart with kube's back-off (CrashLoopBackOff, restartCount
climbing). A pod that does not restart always (restartPolicy Never or OnFailure, a Job's pods)
completes after `ready_delay`: Succeeded (Failed when it crashes under Never). A deleting pod runs its
containers' preStop `sleep` for up to its grace period (still serving, as the zero-downtime recipe has it), then
is stopped and removed (the kubelet's final delete with grace 0). Pods on nodes other than this
server's `--nodes` (a node agent's, `kcp-sim-cluster agent`) are left to the kubelet that runs them.
"""

from __future__ import annotations

import time
from typing import Any

import structlog

from kcp_apiserver.embedding import KeyNotFound, Resource, RevisionConflict
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.informer import cluster_of, key_of
from kcp_sim_cluster.controlplane.nodes import host_ip, node_index, node_names, wants_not_ready
from kcp_sim_cluster.controlplane.objects import Obj
from kcp_sim_cluster.controlplane.podutil import is_terminal, node_name
from kcp_sim_cluster.controlplane.runtime import Sim
from kcp_sim_cluster.controlplane.scheduler import node_index_value
from kcp_sim_cluster.ipam import NodeIPs
from kcp_sim_cluster.kubeletstatus import (
    mark_running,
    progress,
    start_requeue,
    started_at,
    started_events,
    steer,
    stopping_for,
)
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey
from kcpcommon.kubetime import format_time as rfc3339

log = structlog.get_logger("sim.kubelet")

COMPONENT = "kubelet"


class Kubelet(SimController):
    name = "sim-kubelet"
    needs = ("pods", "nodes")
    workers = 16

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.pod_res: Resource = sim.resource("pods")  # type: ignore[assignment]
        self.ips: dict[tuple[str, str], NodeIPs] = {}
        self.started: dict[str, float] = {}  # pod uid -> when its containers started (finer than startTime)
        self.own_nodes = frozenset(node_names(sim.options.nodes))  # a node agent's nodes run their own pods

    def wire(self) -> None:
        self.sim.informer("pods").add_handler(self._on_pod)
        self.sim.informer("nodes").add_handler(self._on_node)

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            assert old is not None
            self.started.pop(str(old["metadata"].get("uid", "")), None)
            ip = (old.get("status") or {}).get("podIP")
            pool = self.ips.get((cluster_of(old), node_name(old)))
            if ip and pool is not None:
                pool.release(ip)
            return
        if is_terminal(new):
            self.started.pop(str(new["metadata"].get("uid", "")), None)
        elif node_name(new):
            self.enqueue(new)

    def _on_node(self, old: Obj | None, new: Obj | None) -> None:
        """A node that recovers (or appears) starts the pods bound to it."""
        if new is None or old is None or wants_not_ready(old) == wants_not_ready(new):
            return
        cluster = cluster_of(new)
        for key in self.sim.informer("pods").keys_by_index("node", node_index_value(cluster, new["metadata"]["name"])):
            self.controller.enqueue(key)

    def _pool(self, cluster: str, node: Obj) -> NodeIPs:
        name = node["metadata"]["name"]
        pool = self.ips.get((cluster, name))
        if pool is None:
            cidr = (node.get("spec") or {}).get("podCIDR") or f"10.244.{node_index(name) % 256}.0/24"
            pool = self.ips[(cluster, name)] = NodeIPs(cidr)
            for pod in self.sim.informer("pods").by_index("node", node_index_value(cluster, name)):
                ip = (pod.get("status") or {}).get("podIP")
                if ip:
                    pool.take(ip, key_of(pod))
        return pool

    async def reconcile(self, key: ObjectKey) -> Result | None:
        pod = self.sim.informer("pods").get(key)
        if pod is None or not node_name(pod):
            return None
        node = self.sim.informer("nodes").get(ObjectKey(key.cluster, "", node_name(pod)))
        if node is None or wants_not_ready(node) or node_name(pod) not in self.own_nodes:
            return None  # no kubelet of ours there (or a sick one): nothing happens to the pod
        if pod["metadata"].get("deletionTimestamp"):
            running = stopping_for(pod, time.time())
            if running > 0:  # its preStop hooks run: it keeps serving until they end
                return Result(requeue_after=running)
            await self._remove(pod)
            return None
        if is_terminal(pod):
            return None
        status = pod.get("status") or {}
        if not status.get("startTime"):
            return await self._start(pod, node)
        return await self._progress(pod)

    async def _remove(self, pod: Obj) -> None:
        """The containers are stopped: the kubelet's final delete (grace 0). Finalizers keep it until removed."""
        if pod["metadata"].get("finalizers"):
            return
        key = self.sim.key(self.pod_res, pod)
        try:
            await self.sim.storage.delete(key, int(pod["metadata"]["resourceVersion"]))
        except (KeyNotFound, RevisionConflict):
            self.controller.enqueue(key_of(pod))  # changed meanwhile: look again (a no-op once gone)

    async def _start(self, pod: Obj, node: Obj) -> Result | None:
        cluster = cluster_of(pod)
        pool = self._pool(cluster, node)
        started = time.time()
        stamp = rfc3339()
        delay = self.sim.options.ready_delay
        may_ready, crashes = steer(pod)
        ready = may_ready and not crashes and delay <= 0
        ip_holder: list[str] = []

        def start(current: dict[str, Any]) -> bool:
            status = current.setdefault("status", {})
            if status.get("startTime") or current["metadata"].get("deletionTimestamp"):
                return False
            ip = status.get("podIP") or (ip_holder[0] if ip_holder else pool.allocate(key_of(current)))
            if ip is None:
                return False
            if not ip_holder:
                ip_holder.append(ip)
            host = host_ip(node_index(node_name(current)))
            mark_running(current, pod_ip=ip, host_ip=host, stamp=stamp, ready=ready, crashes=crashes)
            return True

        written = await self.sim.write_status(self.pod_res, pod, start)
        if written is None:
            if ip_holder and not (pod.get("status") or {}).get("podIP"):
                pool.release(ip_holder[0])
            return None
        self.started[str(pod["metadata"].get("uid", ""))] = started
        self._started_events(written, crashes)
        after = start_requeue(pod, ready_delay=delay, ready=ready, crashes=crashes, elapsed=time.time() - started)
        return Result(requeue_after=after) if after is not None else None

    async def _progress(self, pod: Obj) -> Result | None:
        started = started_at(pod, self.started)
        step = progress(pod, elapsed=time.time() - started, ready_delay=self.sim.options.ready_delay, stamp=rfc3339())
        if step.mutate is not None:
            written = await self.sim.write_status(self.pod_res, pod, step.mutate)
            if written is not None and step.events is not None:
                for type_, reason, message in step.events(written):
                    self.sim.recorder.record(written, type_, reason, message, component=COMPONENT,
                                             host=node_name(pod))
        return Result(requeue_after=step.after) if step.after is not None else None

    def _started_events(self, pod: Obj, crashes: bool) -> None:
        for type_, reason, message in started_events(pod):
            self.sim.recorder.record(pod, type_, reason, message, component=COMPONENT, host=node_name(pod))
