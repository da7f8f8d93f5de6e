"""The lifecycle of the pods bound to the agent's nodes, as their kubelets would run it.

A bound pod starts in one status write (phase Running, podIP from its node's CIDR, hostIP,
startTime, container statuses, conditions; see kubeletstatus.py) and turns Ready `ready_delay`
seconds later. The pod-template annotations of the in-process kubelet steer it (`sim.kcp.io/ready:
"false"`, `sim.kcp.io/crash: "true"`); a pod that does not restart always (a Job's) completes. A pod
being deleted has its containers stopped at once, so the agent sends the kubelet's final delete
(grace 0, on the pod's uid). Every write is a status PUT on the cached resourceVersion: a conflict is
retried from a fresher cache, as any controller's. Pods on a node annotated `sim.kcp.io/not-ready:
"true"` are left as they are until the node recovers.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Protocol

import structlog
from prometheus_client import CollectorRegistry

from kcp_sim_cluster.agent.nodes import COMPONENT, host_ip, pod_cidr
from kcp_sim_cluster.ipam import NodeIPs
from kcp_sim_cluster.kubeletstatus import (
    BACKOFF_INITIAL,
    Mutator,
    mark_running,
    progress,
    start_requeue,
    started_at,
    started_events,
    steer,
    wants_not_ready,
)
from kcpcommon.clients import KubeClientFactory
from kcpcommon.controller import Controller, Result
from kcpcommon.errors import APIConflictError, APINotFoundError
from kcpcommon.frozen import thaw
from kcpcommon.informer import Obj, SharedInformer, deleted_object
from kcpcommon.informer_factory import SharedInformerFactory
from kcpcommon.keys import ObjectKey, key_for
from kcpcommon.kubetime import format_time

log = structlog.get_logger("sim-agent.pods")

NODE_INDEX = "node"
TERMINAL = ("Succeeded", "Failed")


class Recorder(Protocol):
    """Where the kubelet's Events go (kcpcommon's EventRecorder)."""

    def record(self, obj: Mapping[str, Any], type_: str, reason: str, message: str, *, cluster: str | None = None,
               component: str | None = None, host: str | None = None) -> None: ...


def node_name(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _node_index(pod: Obj) -> list[str]:
    name = node_name(pod)
    return [name] if name else []


class PodAgent:
    """Runs the pods whose spec.nodeName is one of `indexes` (node name -> index)."""

    def __init__(self, clients: KubeClientFactory, factory: SharedInformerFactory, *, indexes: Mapping[str, int],
                 ready_delay: float, registry: CollectorRegistry, recorder: Recorder | None = None) -> None:
        self.cluster = clients.name
        self.recorder = recorder
        self.pods = clients.dynamic().resource("v1", "pods", namespaced=True)
        self.indexes = dict(indexes)
        self.ready_delay = ready_delay
        self.informer: SharedInformer = factory.informer(cluster=self.cluster, api_version="v1", plural="pods",
                                                         namespaced=True)
        self.informer.add_indexers({NODE_INDEX: _node_index}, skip_existing=True)
        self.controller: Controller[ObjectKey] = Controller("sim-agent-pods", self.reconcile, workers=16,
                                                            registry=registry, component=COMPONENT)
        self.started: dict[str, float] = {}  # pod uid -> when its containers started (finer than startTime)
        self.pools: dict[str, NodeIPs] = {}
        self.informer.add_handler(on_add=self._changed, on_update=lambda old, new: self._changed(new),
                                  on_delete=self._gone, name="sim-agent-pods")
        self.nodes: SharedInformer = factory.informer(cluster=self.cluster, api_version="v1", plural="nodes",
                                                      namespaced=False)  # the NodeAgent's, shared
        self.nodes.add_handler(on_update=self._node_changed, name="sim-agent-pods-nodes")

    def _node_changed(self, old: Obj, new: Obj) -> None:
        """A node whose kubelet recovers (or falls sick) has its pods looked at again."""
        name = new["metadata"]["name"]
        if name in self.indexes and wants_not_ready(old) != wants_not_ready(new):
            for pod in self.informer.indexer.by_index(NODE_INDEX, name):
                self.controller.enqueue(key_for(pod, cluster=self.cluster))

    def _changed(self, pod: Obj) -> None:
        if node_name(pod) in self.indexes:
            self.controller.enqueue(key_for(pod, cluster=self.cluster))

    def _gone(self, value: Any) -> None:
        pod = deleted_object(value)
        self.started.pop(str(pod["metadata"].get("uid", "")), None)
        ip = (pod.get("status") or {}).get("podIP")
        pool = self.pools.get(node_name(pod))
        if ip and pool is not None:
            pool.release(ip)

    async def run(self) -> None:
        await self.controller.start([self.informer.wait_for_sync])

    def _pool(self, node: str) -> NodeIPs:
        """The node's pod IPs; on first use it learns those its running pods hold (after a restart)."""
        pool = self.pools.get(node)
        if pool is None:
            pool = self.pools[node] = NodeIPs(pod_cidr(self.indexes[node]))
            for pod in self.informer.indexer.by_index(NODE_INDEX, node):
                ip = (pod.get("status") or {}).get("podIP")
                if ip:
                    pool.take(ip, key_for(pod, cluster=self.cluster))
        return pool

    async def reconcile(self, key: ObjectKey) -> Result | None:
        pod = self.informer.indexer.get(key)
        if pod is None or node_name(pod) not in self.indexes:
            return None
        node = self.nodes.indexer.get(ObjectKey(self.cluster, "", node_name(pod)))
        if node is not None and wants_not_ready(node):
            return None  # a sick kubelet: nothing happens to its pods
        if pod["metadata"].get("deletionTimestamp"):
            await self._remove(pod)
            return None
        status = pod.get("status") or {}
        if status.get("phase") in TERMINAL:
            return None
        if not status.get("startTime"):
            return await self._start(key, pod)
        return await self._progress(pod)

    async def _write(self, pod: Obj, mutate: Mutator) -> Obj | None:
        """PUT the status `mutate` makes of the cached pod; a 409 (the cache was behind) raises to retry."""
        body = thaw(pod)
        if not mutate(body):
            return None
        try:
            written: Obj = await self.pods.replace(body, subresource="status")
        except APINotFoundError:
            return None
        return written

    async def _remove(self, pod: Obj) -> None:
        """The containers are stopped: the kubelet's final delete (grace 0); finalizers keep it until removed."""
        meta = pod["metadata"]
        if meta.get("deletionGracePeriodSeconds") == 0:
            return  # sent already: the pod waits for its finalizers
        try:
            await self.pods.delete(meta["name"], namespace=meta.get("namespace"), grace_period_seconds=0,
                                   preconditions={"uid": meta["uid"]})
        except (APINotFoundError, APIConflictError):
            pass  # gone, or another pod of that name now

    async def _start(self, key: ObjectKey, pod: Obj) -> Result | None:
        node = node_name(pod)
        pool = self._pool(node)
        ip = pool.allocate(key)
        if ip is None:
            log.warning("no pod IP left on the node", node=node)
            return Result(requeue_after=BACKOFF_INITIAL)
        started, stamp = time.time(), format_time()
        may_ready, crashes = steer(pod)
        ready = may_ready and not crashes and self.ready_delay <= 0

        def start(current: dict[str, Any]) -> bool:
            mark_running(current, pod_ip=ip, host_ip=host_ip(self.indexes[node]), stamp=stamp, ready=ready,
                         crashes=crashes)
            return True

        try:
            written = await self._write(pod, start)
        except BaseException:
            pool.release(ip)
            raise
        if written is None:
            pool.release(ip)
            return None
        self.started[str(pod["metadata"].get("uid", ""))] = started
        self._record(written, started_events(written))
        log.debug("pod started", pod=str(key), node=node, pod_ip=ip)
        after = start_requeue(pod, ready_delay=self.ready_delay, ready=ready, crashes=crashes,
                              elapsed=time.time() - started)
        return Result(requeue_after=after) if after is not None else None

    async def _progress(self, pod: Obj) -> Result | None:
        started = started_at(pod, self.started)
        step = progress(pod, elapsed=time.time() - started, ready_delay=self.ready_delay, stamp=format_time())
        if step.mutate is not None:
            written = await self._write(pod, step.mutate)
            if written is not None and step.events is not None:
                self._record(written, step.events(written))
        return Result(requeue_after=step.after) if step.after is not None else None

    def _record(self, pod: Obj, events: list[tuple[str, str, str]]) -> None:
        if self.recorder is not None:
            for type_, reason, message in events:
                self.recorder.record(pod, type_, reason, message, cluster=self.cluster, host=node_name(pod))
